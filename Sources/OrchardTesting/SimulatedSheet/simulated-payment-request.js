// Orchard's SIMULATED Payment Request API for Apple Pay: a test double of what Safari does with
// `new PaymentRequest([{supportedMethods: 'https://apple.com/apple-pay', data}], details, options)`,
// and of what Apple's JS SDK does in other browsers when a page offers exactly that one method.
// It runs the demo's simulated ApplePaySession underneath, as WebKit runs its own, and is served
// only by `orchard-sandbox demo`, never by `orchard serve`.
//
// It follows the W3C Payment Request API and WebKit's mapping of it onto Apple Pay: the method
// data is serialized to JSON when the request is made; merchantvalidation, paymentmethodchange
// (a card, or a coupon code as `methodDetails.couponCode`), shippingaddresschange and
// shippingoptionchange each wait for `updateWith()` or go on with the details unchanged; errors
// reach the sheet only as ApplePayError objects in `paymentMethodErrors` (or, as WebKit does,
// `error` and `shippingAddressErrors` while no shipping options are offered); a recurring,
// deferred or automatic-reload agreement comes only from an Apple Pay modifier in
// `details.modifiers` (see #modifierAgreement); `show()` resolves with a PaymentResponse whose
// `details` is the ApplePayPayment; `retry()` keeps the sheet open, `complete()` closes it. Any
// other set of methods goes to the browser's own PaymentRequest.

export const APPLE_PAY_METHOD = 'https://apple.com/apple-pay';

const EVENTS = ['merchantvalidation', 'paymentmethodchange', 'shippingaddresschange', 'shippingoptionchange'];
const CONTACT_OPTIONS = { requestPayerName: 'name', requestPayerEmail: 'email', requestPayerPhone: 'phone' };
// What WebKit's ApplePayRequest (the method data) takes beyond the request's own fields. It has no
// agreement: one put there is ignored, as Safari ignores it, and the sheet shows none.
const APPLE_PAY_FIELDS = [
  'requiredBillingContactFields', 'supportedCountries', 'applicationData', 'supportsCouponCode', 'couponCode',
  'shippingContactEditingMode',
];
// An ApplePayModifier's agreement members, each with the Apple Pay update member WebKit sends it in.
const AGREEMENTS = {
  recurringPaymentRequest: 'newRecurringPaymentRequest',
  deferredPaymentRequest: 'newDeferredPaymentRequest',
  automaticReloadPaymentRequest: 'newAutomaticReloadPaymentRequest',
};
const DATE_MEMBERS = ['recurringPaymentStartDate', 'recurringPaymentEndDate', 'deferredPaymentDate'];
const ADDRESS_ERRORS = {
  addressLine: 'addressLines', city: 'locality', country: 'country', dependentLocality: 'subLocality', phone: 'phoneNumber',
  postalCode: 'postalCode', recipient: 'name', region: 'administrativeArea',
};

const abortError = (message = 'The payment request was aborted.') => new DOMException(message, 'AbortError');
const stateError = (message) => new DOMException(message, 'InvalidStateError');

function checkAmount(item, currency, where) {
  if (!item || typeof item.label !== 'string' || typeof item.amount?.value !== 'string') {
    throw new TypeError(`${where} needs a label and an amount {currency, value}`);
  }
  if (!/^-?\d+(\.\d+)?$/.test(item.amount.value)) throw new TypeError(`${where}: "${item.amount.value}" is not a valid amount`);
  if (currency && item.amount.currency !== currency) throw new TypeError(`${where}: every amount must be in ${currency}`);
}

/** The checks the Payment Request API makes of `details` (and of an update's). */
function checkDetails(details, currency) {
  if (details.total !== undefined) {
    checkAmount(details.total, currency, 'total');
    if (details.total.amount.value.startsWith('-')) throw new TypeError('total must not be negative');
  }
  (details.displayItems ?? []).forEach((item, i) => checkAmount(item, currency, `displayItems[${i}]`));
  const ids = new Set();
  for (const [i, option] of (details.shippingOptions ?? []).entries()) {
    checkAmount(option, currency, `shippingOptions[${i}]`);
    if (ids.has(option.id)) throw new TypeError(`shippingOptions has "${option.id}" twice`);
    ids.add(option.id);
  }
}

/** A PaymentAddress from an Apple Pay contact, field by field as WebKit converts it. */
function paymentAddress(contact) {
  return Object.freeze({
    country: contact?.countryCode ?? '', addressLine: contact?.addressLines ?? [], region: contact?.administrativeArea ?? '',
    city: contact?.locality ?? '', dependentLocality: contact?.subLocality ?? '', postalCode: contact?.postalCode ?? '',
    sortingCode: '', organization: '', recipient: [contact?.givenName, contact?.familyName].filter(Boolean).join(' '),
    phone: contact?.phoneNumber ?? '',
  });
}

const lineItem = (item) => ({ label: item.label, amount: item.amount.value, type: item.pending ? 'pending' : 'final' });

/** The API serializes a modifier's data to JSON when it gets it (a Date becomes a string); that is what it keeps. */
function serializedModifiers(modifiers) {
  return (modifiers ?? []).map(({ supportedMethods, data }) => ({
    supportedMethods, data: data === undefined ? undefined : JSON.parse(JSON.stringify(data)),
  }));
}

/**
 * An agreement from a modifier's JSON, as WebKit converts it to its IDL dictionary: a date member
 * given as a string becomes a Date (JSDOMConvertDate's valueToDate parses it), so the ISO dates
 * the API's JSON made of the page's Date objects reach the sheet as Dates again.
 */
function agreementFromJSON(agreement) {
  const converted = structuredClone(agreement);
  for (const line of Object.values(converted)) {
    if (line === null || typeof line !== 'object') continue;
    for (const member of DATE_MEMBERS) if (line[member] !== undefined) line[member] = new Date(line[member]);
  }
  if (converted.freeCancellationDate !== undefined) converted.freeCancellationDate = new Date(converted.freeCancellationDate);
  return converted;
}

class SimulatedPaymentResponse extends EventTarget {
  #owner;

  constructor(owner, payment) {
    super();
    this.#owner = owner;
    this.requestId = owner.request.id;
    this.methodName = APPLE_PAY_METHOD;
    this.update(payment);
  }

  /** The shopper authorized (again): what the page reads changes with it. */
  update(payment) {
    const { options, request } = this.#owner;
    this.details = payment;
    this.shippingAddress = options.requestShipping ? paymentAddress(payment.shippingContact) : null;
    this.shippingOption = options.requestShipping ? request.shippingOption : null;
    const contact = payment.shippingContact ?? {};
    this.payerName = options.requestPayerName ? [contact.givenName, contact.familyName].filter(Boolean).join(' ') : null;
    this.payerEmail = options.requestPayerEmail ? contact.emailAddress ?? null : null;
    this.payerPhone = options.requestPayerPhone ? contact.phoneNumber ?? null : null;
  }

  complete(result = 'unknown', details = undefined) {
    return this.#owner.complete(result, details);
  }

  retry(errors = {}) {
    return this.#owner.retry(errors);
  }
}

class SimulatedPaymentRequest extends EventTarget {
  #Session;
  #data;
  #details;
  #modifiers;
  #selectedType = null;
  #options;
  #state = 'created';
  #session = null;
  #show = null;
  #response = null;
  #retrying = null;

  constructor(Session, method, details, options = {}) {
    super();
    if (!details || typeof details !== 'object' || !details.total) throw new TypeError('details.total is required');
    checkDetails(details, details.total?.amount?.currency);
    this.#Session = Session;
    // The API serializes method data when the request is made: a Date becomes a string here.
    this.#data = method.data === undefined ? {} : JSON.parse(JSON.stringify(method.data));
    this.#details = structuredClone(details);
    this.#modifiers = serializedModifiers(details.modifiers);
    this.#options = { ...options };
    this.id = details.id ?? crypto.randomUUID();
    this.shippingAddress = null;
    this.shippingType = options.requestShipping ? options.shippingType ?? 'shipping' : null;
    this.shippingOption = options.requestShipping ? (details.shippingOptions ?? []).findLast((o) => o.selected)?.id ?? null : null;
    for (const name of EVENTS) this[`on${name}`] = null;
  }

  canMakePayment() {
    return Promise.resolve(this.#Session.canMakePayments());
  }

  show() {
    if (this.#state !== 'created') return Promise.reject(stateError('show() may be called once'));
    this.#state = 'interactive';
    return new Promise((resolve, reject) => {
      this.#show = { resolve, reject };
      try {
        this.#session = new this.#Session(this.#data.version, this.#appleRequest());
      } catch (error) {
        // Outside a click, Apple Pay refuses the session; the API says so as a SecurityError.
        this.#close(error?.name === 'InvalidAccessError' ? new DOMException(error.message, 'SecurityError') : error);
        return;
      }
      this.#wire(this.#session);
      this.#session.begin();
      // Says on the sheet which API opened it, for the shopper trying the demo and for screenshots.
      const sheet = document.querySelector('[data-testid="simulated-sheet"]');
      sheet?.setAttribute('data-api', 'paymentrequest');
      sheet?.querySelector('h2')?.append(' · Payment Request API');
    });
  }

  abort() {
    if (this.#state !== 'interactive' || (this.#response && !this.#retrying)) return Promise.reject(stateError('nothing to abort'));
    this.#session?.abort();
    this.#close(abortError());
    return Promise.resolve();
  }

  #currency() {
    return this.#details.total.amount.currency;
  }

  #contactFields() {
    const fields = new Set(this.#data.requiredShippingContactFields ?? []);
    if (this.#options.requestShipping) fields.add('postalAddress');
    for (const [option, field] of Object.entries(CONTACT_OPTIONS)) if (this.#options[option]) fields.add(field);
    return [...fields];
  }

  /** Apple Pay's shipping methods, the selected one first as the sheet preselects the first. */
  #shippingMethods() {
    if (!this.#options.requestShipping) return [];
    const options = this.#details.shippingOptions ?? [];
    const ordered = [...options.filter((o) => o.id === this.shippingOption), ...options.filter((o) => o.id !== this.shippingOption)];
    return ordered.map((o) => ({ identifier: o.id, label: o.label, detail: '', amount: o.amount.value }));
  }

  #appleRequest() {
    const data = this.#data;
    if (typeof data.merchantIdentifier !== 'string' || !data.merchantIdentifier) {
      throw new TypeError('the Apple Pay method data needs merchantIdentifier');
    }
    const request = {
      countryCode: data.countryCode, currencyCode: this.#currency(), merchantCapabilities: data.merchantCapabilities,
      supportedNetworks: data.supportedNetworks, total: lineItem(this.#details.total),
      lineItems: (this.#details.displayItems ?? []).map(lineItem), shippingMethods: this.#shippingMethods(),
      requiredShippingContactFields: this.#contactFields(),
    };
    for (const field of APPLE_PAY_FIELDS) if (data[field] !== undefined) request[field] = data[field];
    return Object.assign(request, this.#modifierAgreement());
  }

  /**
   * The agreement of the first Apple Pay modifier that applies to the card (one without
   * `paymentMethodType` applies to any), as WebKit's firstApplicableModifier() finds it: at
   * show(), and after every update for the Apple Pay update's new…PaymentRequest, from the
   * modifiers the update brought or, when it brought none, the earlier ones (the W3C API keeps
   * them, and so does WebKit). Only a modifier's agreement is modelled, not its totals or items.
   */
  #modifierAgreement() {
    const modifier = this.#modifiers.find(({ supportedMethods, data }) => supportedMethods === APPLE_PAY_METHOD
      && data !== undefined && (data.paymentMethodType === undefined || data.paymentMethodType === this.#selectedType));
    const agreement = {};
    for (const key of Object.keys(AGREEMENTS)) {
      if (modifier?.data[key] !== undefined) agreement[key] = agreementFromJSON(modifier.data[key]);
    }
    return agreement;
  }

  #wire(session) {
    session.onvalidatemerchant = (event) => {
      const merchantValidation = new Event('merchantvalidation');
      Object.assign(merchantValidation, {
        validationURL: event.validationURL, methodName: APPLE_PAY_METHOD,
        complete: (merchantSession) => Promise.resolve(merchantSession).then(
          (value) => this.#state === 'interactive' && session.completeMerchantValidation(value),
          () => this.#abortSession()),
      });
      this.#fire(merchantValidation);
    };
    session.onpaymentmethodselected = (event) => {
      this.#selectedType = event.paymentMethod?.type ?? null;
      this.#changed('paymentmethodchange',
        { methodName: APPLE_PAY_METHOD, methodDetails: event.paymentMethod }, (u) => session.completePaymentMethodSelection(u));
    };
    session.oncouponcodechanged = (event) => this.#changed('paymentmethodchange',
      { methodName: APPLE_PAY_METHOD, methodDetails: { couponCode: event.couponCode } }, (u) => session.completeCouponCodeChange(u));
    session.onshippingcontactselected = (event) => {
      this.shippingAddress = paymentAddress(event.shippingContact);
      this.#changed('shippingaddresschange', {}, (u) => session.completeShippingContactSelection(u));
    };
    session.onshippingmethodselected = (event) => {
      this.shippingOption = event.shippingMethod.identifier;
      this.#changed('shippingoptionchange', {}, (u) => session.completeShippingMethodSelection(u));
    };
    session.onpaymentauthorized = (event) => {
      if (this.#retrying) {
        this.#response.update(event.payment);
        const { resolve } = this.#retrying;
        this.#retrying = null;
        resolve();
        return;
      }
      this.#response = new SimulatedPaymentResponse(this.#owner(), event.payment);
      this.#show.resolve(this.#response);
    };
    session.oncancel = () => this.#close(abortError('The shopper closed the payment sheet.'));
  }

  #owner() {
    return {
      request: this, options: this.#options,
      complete: (result, details) => this.#complete(result, details),
      retry: (errors) => this.#retry(errors),
    };
  }

  #fire(event) {
    try {
      this[`on${event.type}`]?.call(this, event);
    } catch (error) {
      console.warn('Simulated Payment Request: the page threw from its event handler', error);
    }
    this.dispatchEvent(event);
  }

  /** An event the page may answer with `updateWith(details)`; without one, nothing changes. */
  #changed(type, fields, complete) {
    const event = new Event(type);
    let updating = false;
    event.updateWith = (update) => {
      if (updating) throw stateError('updateWith() was already called');
      updating = true;
      Promise.resolve(update).then((details) => {
        if (this.#state !== 'interactive') return;
        complete(this.#apply(details, type));
      }).catch(() => this.#abortSession());
    };
    Object.assign(event, fields);
    this.#fire(event);
    if (!updating) complete(this.#apply({}, type));
  }

  /** A PaymentDetailsUpdate, checked and applied, as the Apple Pay update the sheet takes. */
  #apply(update, type) {
    checkDetails(update, this.#currency());
    for (const key of ['total', 'displayItems', 'shippingOptions']) if (update[key] !== undefined) this.#details[key] = structuredClone(update[key]);
    if (update.shippingOptions) this.shippingOption = update.shippingOptions.findLast((o) => o.selected)?.id ?? null;
    if (update.modifiers !== undefined) this.#modifiers = serializedModifiers(update.modifiers);
    const result = {
      newTotal: lineItem(this.#details.total), newLineItems: (this.#details.displayItems ?? []).map(lineItem),
      errors: type === 'shippingoptionchange' ? [] : this.#errors(update.error, update.shippingAddressErrors, update.paymentMethodErrors),
    };
    if (type !== 'paymentmethodchange' || update.shippingOptions) result.newShippingMethods = this.#shippingMethods();
    for (const [key, agreement] of Object.entries(this.#modifierAgreement())) result[AGREEMENTS[key]] = agreement;
    return result;
  }

  /** The sheet's errors: ApplePayError objects as they are, and the API's own fields as WebKit maps them. */
  #errors(error, addressErrors, paymentMethodErrors) {
    const errors = [];
    if (this.#options.requestShipping && !(this.#details.shippingOptions ?? []).length) {
      if (error) errors.push(new window.ApplePayError('shippingContactInvalid', undefined, error));
      for (const [field, contactField] of Object.entries(ADDRESS_ERRORS)) {
        if (addressErrors?.[field]) errors.push(new window.ApplePayError('shippingContactInvalid', contactField, addressErrors[field]));
      }
    }
    if (paymentMethodErrors !== undefined) {
      const list = Array.isArray(paymentMethodErrors) ? paymentMethodErrors : [];
      if (!list.every((e) => e instanceof window.ApplePayError)) {
        // WebKit converts them to ApplePayError and, failing that, drops them all.
        console.warn('Simulated Payment Request: paymentMethodErrors must be ApplePayError objects; none are shown');
      } else {
        errors.push(...list);
      }
    }
    return errors;
  }

  #complete(result, details) {
    if (this.#state !== 'interactive' || this.#retrying) return Promise.reject(stateError('the response is already complete'));
    const success = result === 'success';
    const completion = { status: success ? 0 : 1, errors: [] };
    // WebKit's ApplePayPaymentCompleteDetails: the Wallet order, as Apple Pay JS takes it.
    if (details?.orderDetails) completion.orderDetails = details.orderDetails;
    this.#session.completePayment(completion);
    // A failed complete() is final: the sheet closes, where a session's STATUS_FAILURE would let the shopper retry.
    if (!success) this.#session.abort();
    this.#state = 'closed';
    return Promise.resolve();
  }

  #retry({ error, shippingAddress, paymentMethod } = {}) {
    if (this.#state !== 'interactive' || this.#retrying) return Promise.reject(stateError('the response cannot be retried now'));
    const errors = this.#errors(error, shippingAddress, paymentMethod);
    if (!errors.length) errors.push(new window.ApplePayError('unknown', undefined, ''));
    this.#session.completePayment({ status: 1, errors });
    return new Promise((resolve, reject) => {
      this.#retrying = { resolve, reject };
    });
  }

  #abortSession() {
    if (this.#state !== 'interactive') return;
    this.#session.abort();
    this.#close(abortError());
  }

  #close(error) {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    if (this.#retrying) this.#retrying.reject(error);
    else if (!this.#response) this.#show?.reject(error);
    this.#retrying = null;
  }
}

/**
 * Puts the double in place of the browser's `window.PaymentRequest`: a request whose only method
 * is Apple Pay runs on `Session`; any other goes to the browser's own. A browser without the API
 * (Firefox) gets none, as Apple's SDK adds none there.
 */
export function installPaymentRequest(Session) {
  const Native = window.PaymentRequest;
  if (typeof Native !== 'function') return;
  function PaymentRequest(methodData, details, options) {
    if (!new.target) throw new TypeError("Constructor PaymentRequest requires 'new'");
    const methods = Array.isArray(methodData) ? methodData : [];
    if (methods.length === 1 && methods[0]?.supportedMethods === APPLE_PAY_METHOD) {
      return new SimulatedPaymentRequest(Session, methods[0], details, options);
    }
    return new Native(methodData, details, options);
  }
  window.PaymentRequest = PaymentRequest;
}
