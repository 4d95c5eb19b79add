// Orchard's SIMULATED Apple Pay sheet: a test double of Safari's ApplePaySession for
// `orchard-sandbox demo` and the browser tests. It is served only by the demo, never by `orchard serve`.
//
// It follows Apple Pay JS's documented contract: the same statics, events, completion calls
// and ordering rules, a user gesture for new ApplePaySession/begin, one session at a time and
// Safari's 30 s deadline for every answer. It differs where a browser cannot do what Safari
// does: the "card" is fake and the token is minted by the demo server (POST /demo/token),
// signed by a TEST chain that only a demo configuration trusts. Where Safari departs from the
// documentation in a way a page must allow for, it does as Safari does: an update that leaves out
// the payment's agreement drops it from the sheet (renewedAgreement).
//
// Installed only where no ApplePaySession exists, so a real Safari or another test double wins.
// With it comes the Payment Request API's Apple Pay method (simulated-payment-request.js), as
// Safari has both.

import { installPaymentRequest } from './simulated-payment-request.js';

const MAX_VERSION = 14;
const DEADLINE_MS = 30_000;
const VALIDATION_URL = 'https://apple-pay-gateway-cert.apple.com/paymentservices/startSession';

const CARDS = [
  { displayName: 'Visa 1111', network: 'Visa', type: 'debit' },
  { displayName: 'MasterCard 4444', network: 'MasterCard', type: 'credit' },
];

const ADDRESSES = [
  {
    givenName: 'Camille', familyName: 'Martin', emailAddress: 'camille@example.org', phoneNumber: '+33 1 23 45 67 89',
    addressLines: ['12 rue des Pommiers'], locality: 'Paris', postalCode: '75011', administrativeArea: '',
    country: 'France', countryCode: 'FR',
  },
  {
    givenName: 'Jonas', familyName: 'Weber', emailAddress: 'jonas@example.org', phoneNumber: '+49 30 1234567',
    addressLines: ['Apfelweg 3'], locality: 'Berlin', postalCode: '10115', administrativeArea: '',
    country: 'Germany', countryCode: 'DE',
  },
  {
    givenName: 'Alex', familyName: 'Doe', emailAddress: 'alex@example.org', phoneNumber: '+1 212 555 0100',
    addressLines: ['1 Orchard Street'], locality: 'New York', postalCode: '10002', administrativeArea: 'NY',
    country: 'United States', countryCode: 'US',
  },
];

let activeSession = null;

function domError(name, message) {
  return new DOMException(message, name);
}

/** Safari hands the page a redacted contact until the shopper authorizes. */
function redacted(address) {
  const { locality, postalCode, administrativeArea, country, countryCode } = address;
  return { locality, postalCode, administrativeArea, country, countryCode, addressLines: [], subLocality: '', subAdministrativeArea: '' };
}

/** Decimal string ± minor units, without floats ("12.34" + 1 → "12.35"). */
function addMinorUnits(amount, delta) {
  const [whole, fraction = ''] = amount.split('.');
  const scale = 10n ** BigInt(fraction.length);
  const total = BigInt(whole) * scale + BigInt(fraction || '0') + BigInt(delta);
  if (fraction.length === 0) return total.toString();
  const digits = total.toString().padStart(fraction.length + 1, '0');
  return `${digits.slice(0, -fraction.length)}.${digits.slice(-fraction.length)}`;
}

function isAmount(value) {
  return typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value);
}

function checkRequest(version, request) {
  if (!Number.isInteger(version) || version < 1 || version > MAX_VERSION) {
    throw domError('InvalidAccessError', `"${version}" is not a supported version.`);
  }
  const missing = ['countryCode', 'currencyCode', 'supportedNetworks', 'merchantCapabilities', 'total'].filter(
    (key) => request?.[key] === undefined);
  if (missing.length) throw new TypeError(`Missing required payment request fields: ${missing.join(', ')}`);
  if (!Array.isArray(request.supportedNetworks) || request.supportedNetworks.length === 0) {
    throw new TypeError('supportedNetworks must list at least one network');
  }
  if (!request.merchantCapabilities.includes('supports3DS')) {
    throw new TypeError('merchantCapabilities must include "supports3DS"');
  }
  if (!isAmount(request.total.amount) || request.total.amount.startsWith('-') || !request.total.label) {
    throw new TypeError('total needs a label and a non-negative decimal string amount');
  }
  if ((request.supportsCouponCode !== undefined || request.couponCode !== undefined) && version < 12) {
    throw new TypeError('coupon codes need Apple Pay JS version 12');
  }
  checkAgreement(version, request);
}

/** The agreement dictionaries' required members and types, as WebKit's IDL has them. */
const AGREEMENT_LINES = {
  recurringPaymentRequest: { required: 'regularBilling', optional: ['trialBilling'], timing: 'recurring' },
  deferredPaymentRequest: { required: 'deferredBilling', optional: [], timing: 'deferred' },
  automaticReloadPaymentRequest: { required: 'automaticReloadBilling', optional: [], timing: 'automaticReload' },
};
const DATE_MEMBERS = ['recurringPaymentStartDate', 'recurringPaymentEndDate', 'deferredPaymentDate'];

/** The one agreement a request carries, checked: `{key, agreement}` or null. */
function checkAgreement(version, request) {
  const present = Object.keys(AGREEMENT_LINES).filter((key) => request[key] !== undefined);
  if (present.length === 0) return null;
  if (version < 14) throw new TypeError(`${present[0]} needs Apple Pay JS version 14`);
  if (present.length > 1) throw new TypeError(`one agreement per request, not ${present.join(' and ')}`);
  if (request.multiTokenContexts !== undefined && present[0] !== 'deferredPaymentRequest') {
    throw new TypeError(`multiTokenContexts cannot be combined with ${present[0]}`);
  }
  const key = present[0];
  const agreement = request[key];
  const { required, optional, timing } = AGREEMENT_LINES[key];
  for (const member of ['paymentDescription', 'managementURL', required]) {
    if (agreement?.[member] === undefined) throw new TypeError(`Missing required member ${member} in ${key}`);
  }
  for (const url of ['managementURL', 'tokenNotificationURL']) {
    if (agreement[url] !== undefined && !/^https?:\/\//.test(String(agreement[url]))) {
      throw new TypeError(`${key}.${url} must be an absolute URL`);
    }
  }
  for (const name of [required, ...optional]) {
    const line = agreement[name];
    if (line === undefined) continue;
    if (!line.label || !isAmount(line.amount)) throw new TypeError(`${key}.${name} needs a label and a decimal string amount`);
    if ((line.paymentTiming ?? 'immediate') !== timing) throw new TypeError(`${key}.${name}.paymentTiming must be "${timing}"`);
    for (const member of DATE_MEMBERS) {
      if (line[member] !== undefined && !(line[member] instanceof Date)) {
        throw new TypeError(`${key}.${name}.${member} is not a Date`);
      }
    }
  }
  if (agreement.freeCancellationDate !== undefined && !(agreement.freeCancellationDate instanceof Date)) {
    throw new TypeError(`${key}.freeCancellationDate is not a Date`);
  }
  return { key, agreement };
}

/** An update's member that carries each kind of agreement again. */
const RENEWALS = {
  newRecurringPaymentRequest: 'recurringPaymentRequest',
  newDeferredPaymentRequest: 'deferredPaymentRequest',
  newAutomaticReloadPaymentRequest: 'automaticReloadPaymentRequest',
};

/**
 * The agreement an update carries again, checked as a request's, or null when it carries none.
 * PassKit documents a missing one as "unchanged", but Safari drops a deferred payment request
 * from the sheet when the shopper changes card and the update leaves it out (WebKit/WebKit#70430):
 * the terms go, and the token is a device token. This sheet drops any agreement from any update
 * that leaves it out, so a page passes here only if it sends the agreement again every time.
 */
function renewedAgreement(version, update) {
  const request = {};
  for (const [member, key] of Object.entries(RENEWALS)) if (update[member] !== undefined) request[key] = update[member];
  return checkAgreement(version, request);
}

/** What the sheet says of an agreement, as Safari shows it under the total. */
function describeAgreement({ key, agreement }, currency) {
  const line = agreement.regularBilling ?? agreement.deferredBilling ?? agreement.automaticReloadBilling;
  const when = {
    recurringPaymentRequest: () => `every ${line.recurringPaymentIntervalCount ?? 1} ${line.recurringPaymentIntervalUnit ?? 'month'}`,
    deferredPaymentRequest: () => `on ${line.deferredPaymentDate.toISOString().slice(0, 10)}`,
    automaticReloadPaymentRequest: () => `when the balance is below ${line.automaticReloadPaymentThresholdAmount} ${currency}`,
  }[key]();
  return `${agreement.paymentDescription}: ${line.label} ${line.amount} ${currency} ${when}`;
}

function checkMerchantSession(session) {
  const fields = ['merchantSessionIdentifier', 'signature', 'nonce', 'epochTimestamp', 'expiresAt', 'domainName'];
  if (!session || typeof session !== 'object' || fields.some((key) => session[key] === undefined)) {
    return 'the merchant session is not the object Apple returned';
  }
  if (Number(session.expiresAt) <= Date.now()) return 'the merchant session has expired';
  if (session.domainName !== window.location.hostname) {
    return `the merchant session is for ${session.domainName}, not ${window.location.hostname}`;
  }
  return null;
}

function element(tag, attributes = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === 'text') node.textContent = value;
    else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

class SimulatedApplePaySession extends EventTarget {
  static STATUS_SUCCESS = 0;
  static STATUS_FAILURE = 1;
  static STATUS_INVALID_BILLING_POSTAL_ADDRESS = 2;
  static STATUS_INVALID_SHIPPING_POSTAL_ADDRESS = 3;
  static STATUS_INVALID_SHIPPING_CONTACT = 4;
  static STATUS_PIN_REQUIRED = 5;
  static STATUS_PIN_INCORRECT = 6;
  static STATUS_PIN_LOCKOUT = 7;

  static supportsVersion(version) {
    return Number.isInteger(version) && version >= 1 && version <= MAX_VERSION;
  }

  static canMakePayments() {
    return true;
  }

  static canMakePaymentsWithActiveCard() {
    return Promise.resolve(true);
  }

  static applePayCapabilities() {
    return Promise.resolve({ paymentCredentialStatus: 'paymentCredentialsAvailable' });
  }

  #version;
  #request;
  #state = 'created';
  #awaiting = null;
  #deadline = null;
  #total;
  #lineItems;
  #shippingMethods;
  #agreement;
  #updates = 0;
  #card = CARDS[0];
  #address = ADDRESSES[0];
  #ui = null;

  constructor(version, request) {
    super();
    if (!navigator.userActivation?.isActive) {
      throw domError('InvalidAccessError', 'Must create a new ApplePaySession from a user gesture handler.');
    }
    checkRequest(version, request);
    this.#version = version;
    this.#request = structuredClone(request);
    this.#total = this.#request.total;
    this.#lineItems = this.#request.lineItems ?? [];
    this.#shippingMethods = this.#request.shippingMethods ?? [];
    this.#agreement = checkAgreement(version, this.#request);
    for (const name of ['validatemerchant', 'paymentmethodselected', 'shippingcontactselected', 'shippingmethodselected',
      'couponcodechanged', 'paymentauthorized', 'cancel']) {
      this[`on${name}`] = null;
    }
  }

  begin() {
    if (this.#state !== 'created') throw domError('InvalidStateError', 'The session has already begun.');
    if (!navigator.userActivation?.isActive) {
      throw domError('InvalidAccessError', 'Must call ApplePaySession.begin from a user gesture handler.');
    }
    if (activeSession) throw domError('InvalidAccessError', 'Another ApplePaySession is already active.');
    activeSession = this;
    this.#render();
    this.#expect('validating', 'completeMerchantValidation');
    this.#fire('validatemerchant', { validationURL: VALIDATION_URL });
  }

  abort() {
    if (this.#state === 'closed') return;
    this.#close();
  }

  completeMerchantValidation(merchantSession) {
    this.#complete('completeMerchantValidation');
    const problem = checkMerchantSession(merchantSession);
    if (problem) {
      console.warn(`Simulated Apple Pay sheet: ${problem}`);
      this.#showMessage('Payment not available', true);
      this.#cancel();
      return;
    }
    this.#expect('updating', 'completePaymentMethodSelection');
    this.#fire('paymentmethodselected', { paymentMethod: { ...this.#card } });
  }

  completePaymentMethodSelection(update, ...legacy) {
    this.#complete('completePaymentMethodSelection');
    this.#apply(legacy.length ? { newTotal: update, newLineItems: legacy[0] } : update);
    if (this.#needsShipping() && this.#address && !this.#addressSent) {
      this.#addressSent = true;
      this.#sendAddress();
    } else {
      this.#ready();
    }
  }

  #addressSent = false;

  completeShippingContactSelection(update, ...legacy) {
    this.#complete('completeShippingContactSelection');
    this.#apply(legacy.length ? { newShippingMethods: legacy[0], newTotal: legacy[1], newLineItems: legacy[2] } : update);
    this.#ready();
  }

  completeShippingMethodSelection(update, ...legacy) {
    this.#complete('completeShippingMethodSelection');
    this.#apply(legacy.length ? { newTotal: legacy[0], newLineItems: legacy[1] } : update);
    this.#ready();
  }

  completeCouponCodeChange(update) {
    if (this.#version < 12) throw domError('InvalidAccessError', 'completeCouponCodeChange needs version 12.');
    this.#complete('completeCouponCodeChange');
    this.#apply(update);
    this.#ready();
  }

  completePayment(result) {
    this.#complete('completePayment');
    const status = typeof result === 'number' ? result : result?.status;
    const errors = typeof result === 'object' && Array.isArray(result.errors) ? result.errors : [];
    if (status === SimulatedApplePaySession.STATUS_SUCCESS) {
      const order = typeof result === 'object' ? result.orderDetails : undefined;
      if (order !== undefined) {
        // ApplePayPaymentOrderDetails: four required strings, as WebIDL would insist.
        const fields = ['orderTypeIdentifier', 'orderIdentifier', 'webServiceURL', 'authenticationToken'];
        if (!fields.every((field) => typeof order?.[field] === 'string')) {
          throw new TypeError(`orderDetails needs ${fields.join(', ')}.`);
        }
        // What Wallet would be handed, told to the page for a test to read (the token's length only).
        const { orderTypeIdentifier, orderIdentifier, webServiceURL } = order;
        const detail = { orderTypeIdentifier, orderIdentifier, webServiceURL, tokenLength: order.authenticationToken.length };
        window.dispatchEvent(new CustomEvent('simulatedsheet:walletorder', { detail }));
      }
      this.#showMessage(order ? 'Done: the order is in Wallet' : 'Done', false);
      this.#state = 'done';
      this.#ui.root.dataset.state = 'done';
      setTimeout(() => this.#close(), 600);
      return;
    }
    this.#showErrors(errors.length ? errors : [{ message: 'Payment not completed' }]);
    this.#ready();
  }

  // ---- state machine ----

  #expect(state, call) {
    this.#state = state;
    this.#awaiting = call;
    if (this.#ui) {
      this.#ui.root.dataset.state = state;
      this.#ui.root.setAttribute('aria-busy', 'true');
    }
    clearTimeout(this.#deadline);
    this.#deadline = setTimeout(() => {
      console.warn(`Simulated Apple Pay sheet: ${call} was not called within 30 s; the session is cancelled as Safari would.`);
      this.#showMessage('Payment not completed', true);
      this.#cancel();
    }, DEADLINE_MS);
  }

  #complete(call) {
    if (this.#state === 'closed') throw domError('InvalidStateError', 'The session is no longer active.');
    if (this.#awaiting !== call) {
      throw domError('InvalidStateError', `${call} was called while the sheet was waiting for ${this.#awaiting ?? 'the shopper'}.`);
    }
    clearTimeout(this.#deadline);
    this.#awaiting = null;
  }

  #ready() {
    this.#state = 'ready';
    this.#ui.root.dataset.state = 'ready';
    this.#ui.root.removeAttribute('aria-busy');
    this.#renderSummary();
  }

  #fire(type, fields) {
    const event = new Event(type);
    Object.assign(event, fields);
    queueMicrotask(() => {
      const handler = this[`on${type}`];
      try {
        if (typeof handler === 'function') handler.call(this, event);
        this.dispatchEvent(event);
      } catch (error) {
        console.warn('Simulated Apple Pay sheet: the page threw from its event handler', error);
      }
    });
  }

  #cancel() {
    if (this.#state === 'closed') return;
    this.#close();
    this.#fire('cancel', {});
  }

  #close() {
    clearTimeout(this.#deadline);
    this.#state = 'closed';
    this.#awaiting = null;
    if (activeSession === this) activeSession = null;
    if (this.#ui) {
      this.#ui.root.dataset.state = 'closed';
      this.#ui.overlay.remove();
      this.#ui.opener?.focus?.();
    }
  }

  #needsShipping() {
    return (this.#request.requiredShippingContactFields ?? []).includes('postalAddress');
  }

  #sendAddress() {
    this.#expect('updating', 'completeShippingContactSelection');
    this.#fire('shippingcontactselected', { shippingContact: redacted(this.#address) });
  }

  #apply(update) {
    if (!update || typeof update !== 'object') throw new TypeError('The update must be an object.');
    if (update.newTotal) {
      if (!isAmount(update.newTotal.amount)) throw new TypeError('newTotal.amount must be a decimal string');
      this.#total = update.newTotal;
    }
    if (Array.isArray(update.newLineItems)) this.#lineItems = update.newLineItems;
    if (Array.isArray(update.newShippingMethods)) this.#shippingMethods = update.newShippingMethods;
    this.#agreement = renewedAgreement(this.#version, update);
    this.#showErrors(Array.isArray(update.errors) ? update.errors : []);
    // For tests: how many updates the sheet took, and the agreement it holds after the last.
    this.#updates += 1;
    this.#ui.root.dataset.updates = String(this.#updates);
    this.#renderAgreement();
  }

  // ---- the sheet ----

  #render() {
    const title = element('h2', { id: 'orchard-sheet-title', text: 'Apple Pay — simulated' });
    const banner = element('p', {
      class: 'orchard-sheet-banner',
      text: 'TEST DOUBLE served by orchard-sandbox demo. No real card, no real payment.',
    });
    const card = element('select', { 'data-testid': 'sheet-card', id: 'orchard-sheet-card' },
      CARDS.map((c, i) => element('option', { value: String(i), text: `${c.displayName} (${c.type})` })));
    card.addEventListener('change', () => {
      this.#card = CARDS[Number(card.value)];
      this.#whenReady(() => {
        this.#expect('updating', 'completePaymentMethodSelection');
        this.#fire('paymentmethodselected', { paymentMethod: { ...this.#card } });
      });
    });
    const contact = element('select', { 'data-testid': 'sheet-shipping-contact', id: 'orchard-sheet-contact' },
      ADDRESSES.map((a, i) => element('option', {
        value: String(i), text: `${a.givenName} ${a.familyName}, ${a.locality} (${a.countryCode})`,
      })));
    contact.addEventListener('change', () => {
      this.#address = ADDRESSES[Number(contact.value)];
      this.#whenReady(() => this.#sendAddress());
    });
    const method = element('select', { 'data-testid': 'sheet-shipping-method', id: 'orchard-sheet-method' });
    method.addEventListener('change', () => {
      const chosen = this.#shippingMethods.find((m) => m.identifier === method.value);
      if (!chosen) return;
      this.#whenReady(() => {
        this.#expect('updating', 'completeShippingMethodSelection');
        this.#fire('shippingmethodselected', { shippingMethod: { ...chosen } });
      });
    });
    const coupon = element('input', {
      'data-testid': 'sheet-coupon', id: 'orchard-sheet-coupon', type: 'text', autocomplete: 'off',
      value: this.#request.couponCode ?? '',
    });
    const applyCoupon = element('button', { type: 'button', 'data-testid': 'sheet-coupon-apply', text: 'Apply' });
    applyCoupon.addEventListener('click', () => this.#whenReady(() => {
      this.#expect('updating', 'completeCouponCodeChange');
      this.#fire('couponcodechanged', { couponCode: coupon.value.trim() });
    }));
    const tamper = element('input', { type: 'checkbox', 'data-testid': 'sheet-tamper', id: 'orchard-sheet-tamper' });
    const terms = element('div', { class: 'orchard-sheet-terms' });
    const lines = element('ul', { class: 'orchard-sheet-lines', 'data-testid': 'sheet-lines' });
    const total = element('p', { class: 'orchard-sheet-total', 'data-testid': 'sheet-total' });
    const errors = element('ul', { class: 'orchard-sheet-errors', 'data-testid': 'sheet-errors', role: 'alert' });
    const message = element('p', { class: 'orchard-sheet-message', 'data-testid': 'sheet-message', role: 'status' });
    const pay = element('button', { type: 'button', class: 'orchard-sheet-pay', 'data-testid': 'sheet-pay', text: 'Pay (simulated)' });
    pay.addEventListener('click', () => this.#whenReady(() => this.#authorize(tamper.checked)));
    const cancel = element('button', { type: 'button', class: 'orchard-sheet-cancel', 'data-testid': 'sheet-cancel', text: 'Cancel' });
    cancel.addEventListener('click', () => this.#cancel());

    const field = (label, input) => element('div', { class: 'orchard-sheet-field' }, [
      element('label', { for: input.id, text: label }), input]);
    const couponRow = element('div', { class: 'orchard-sheet-field' }, [
      element('label', { for: coupon.id, text: 'Coupon' }), element('div', { class: 'orchard-sheet-row' }, [coupon, applyCoupon])]);
    const body = [banner, field('Card', card)];
    if (this.#needsShipping()) body.push(field('Ship to', contact), field('Delivery', method));
    if (this.#request.supportsCouponCode && this.#version >= 12) body.push(couponRow);
    body.push(lines, total, terms, errors, message,
      element('div', { class: 'orchard-sheet-field orchard-sheet-test' }, [
        tamper, element('label', { for: tamper.id, text: 'Test: sign one minor unit more than the total shown' })]),
      element('div', { class: 'orchard-sheet-actions' }, [cancel, pay]));
    const root = element('div', {
      class: 'orchard-sheet', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': title.id,
      'data-testid': 'simulated-sheet', 'data-state': 'created', 'data-updates': '0',
    }, [title, ...body]);
    root.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') this.#cancel();
    });
    const overlay = element('div', { class: 'orchard-sheet-overlay' }, [root]);
    const opener = document.activeElement;
    document.body.append(overlay);
    this.#ui = { overlay, root, card, contact, method, coupon, lines, total, terms, errors, message, pay, opener };
    this.#renderSummary();
    this.#renderAgreement();
    card.focus();
  }

  /** The agreement's terms under the total, or none once an update dropped it; `data-agreement` names its kind. */
  #renderAgreement() {
    const agreement = this.#agreement;
    this.#ui.root.dataset.agreement = agreement?.key ?? 'none';
    this.#ui.terms.replaceChildren(...(agreement
      ? [element('p', {
        class: 'orchard-sheet-agreement', 'data-testid': 'sheet-agreement', 'data-kind': agreement.key,
        'data-token-notification-url': agreement.agreement.tokenNotificationURL ?? '',
        text: describeAgreement(agreement, this.#request.currencyCode),
      })]
      : []));
  }

  #whenReady(action) {
    if (this.#state !== 'ready') return;
    action();
  }

  #renderSummary() {
    const { lines, total, method, pay } = this.#ui;
    const currency = this.#request.currencyCode;
    lines.replaceChildren(...this.#lineItems.map((item) => element('li', {}, [
      element('span', { text: item.label }), element('span', { text: `${item.amount} ${currency}` })])));
    total.textContent = `Pay ${this.#total.label} ${this.#total.amount} ${currency}`;
    total.dataset.amount = this.#total.amount;
    const selected = method.value;
    method.replaceChildren(...this.#shippingMethods.map((m) => element('option', {
      value: m.identifier, text: `${m.label} — ${m.amount} ${currency}`,
    })));
    if (this.#shippingMethods.some((m) => m.identifier === selected)) method.value = selected;
    const blocking = [...this.#ui.errors.children].some((li) => ['addressUnserviceable', 'shippingContactInvalid'].includes(li.dataset.code));
    pay.disabled = this.#state !== 'ready' || blocking;
  }

  #showErrors(errors) {
    this.#ui.errors.replaceChildren(...errors.map((error) => {
      const item = element('li', { text: error.message || error.code || 'Error' });
      if (error.code) item.dataset.code = error.code;
      return item;
    }));
  }

  #showMessage(text, isError) {
    if (!this.#ui) return;
    this.#ui.message.textContent = text;
    this.#ui.message.classList.toggle('orchard-sheet-message-error', isError);
  }

  async #authorize(tampered) {
    this.#state = 'authorizing';
    this.#ui.root.dataset.state = 'authorizing';
    this.#ui.pay.disabled = true;
    this.#showErrors([]);
    this.#showMessage('Authorizing…', false);
    let token;
    try {
      const response = await fetch(new URL('token', import.meta.url), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          amount: tampered ? addMinorUnits(this.#total.amount, 1) : this.#total.amount,
          currencyCode: this.#request.currencyCode,
          applicationData: this.#request.applicationData,
          paymentMethod: this.#card,
          // Safari pays an agreement with a merchant token where the issuer supports one: the
          // agreement the sheet still holds, not the one the request opened with.
          merchantToken: this.#agreement !== null,
        }),
      });
      if (!response.ok) throw new Error(`the demo server could not mint a token (${response.status})`);
      token = await response.json();
    } catch (error) {
      console.warn('Simulated Apple Pay sheet:', error);
      this.#showMessage('Payment not completed', true);
      this.#ready();
      return;
    }
    if (this.#state === 'closed') return;
    this.#showMessage('', false);
    const contact = { ...this.#address };
    this.#expect('authorizing', 'completePayment');
    this.#fire('paymentauthorized', {
      payment: { token, shippingContact: contact, billingContact: { ...contact, emailAddress: undefined, phoneNumber: undefined } },
    });
  }
}

class SimulatedApplePayError {
  constructor(code = 'unknown', contactField, message = '') {
    this.code = code;
    this.contactField = contactField;
    this.message = message;
  }
}

if (!('ApplePaySession' in window)) {
  // Beside this module, so the sheet also works where Orchard is served under a path prefix.
  const link = element('link', { rel: 'stylesheet', href: new URL('simulated-sheet.css', import.meta.url).href });
  document.head.append(link);
  window.ApplePaySession = SimulatedApplePaySession;
  window.ApplePayError = SimulatedApplePayError;
  installPaymentRequest(SimulatedApplePaySession);
  document.documentElement.dataset.simulatedApplePay = 'true';
}
