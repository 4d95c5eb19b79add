// Orchard's Apple Pay button for any checkout page: one ES module, no dependencies.
//
//   <div id="apple-pay"></div>
//   <script type="module">
//     import { mount } from '/orchard/orchard.js';
//     mount(document.getElementById('apple-pay'), {
//       clientSecret: '…',  // from POST /v1/payment-requests, made by the shop's backend
//       onOutcome: ({ status, paymentId }) => { /* success | failure | cancelled | unavailable */ },
//     });
//   </script>
//
// It shows the button only where Apple Pay can pay, runs the whole session against the Orchard
// it was loaded from (merchant validation, shipping updates, authorization), and reports each
// step by callback and as `orchard:*` DOM events on the container. Every URL is relative to this
// module, so Orchard can sit under any path of the shop's own domain behind its reverse proxy.
// Only what Apple documents for ApplePaySession is used; every number comes from the server.

const BASE = new URL('./', import.meta.url);

/** Each call the sheet waits on gives up well inside Safari's 30 s. */
export const STEP_TIMEOUT_MS = 25_000;

/** A failed call: `status` 0 for network failures and timeouts; `body` is the server's JSON, if any. */
export class ApiError extends Error {
  constructor(message, { status = 0, body = null, timedOut = false } = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
    this.timedOut = timedOut;
  }
}

/** JSON to and from Orchard; `path` is relative to this module (a leading slash is ignored). */
export async function request(method, path, body, timeoutMs = STEP_TIMEOUT_MS) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let response;
  try {
    response = await fetch(new URL(path.replace(/^\//, ''), BASE), {
      method,
      headers: body === undefined ? { Accept: 'application/json' } : { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: controller.signal,
      credentials: 'same-origin',
      cache: 'no-store',
    });
  } catch (error) {
    throw new ApiError(error.name === 'AbortError' ? 'timeout' : 'network', { timedOut: error.name === 'AbortError' });
  } finally {
    clearTimeout(timer);
  }
  let json = null;
  try {
    json = await response.json();
  } catch {
    // Not JSON: the status alone has to do.
  }
  if (!response.ok) {
    throw new ApiError(json?.error?.message ?? `HTTP ${response.status}`, { status: response.status, body: json });
  }
  return json;
}

export const getJSON = (path, timeoutMs) => request('GET', path, undefined, timeoutMs);
export const postJSON = (path, body, timeoutMs) => request('POST', path, body, timeoutMs);

/** The messages the shopper may see; `mount(…, {strings})` overrides any of them. */
export const defaultStrings = {
  locale: 'en',
  payButton: 'Buy with Apple Pay',
  failureTitle: 'Payment not completed',
  cancelledDetail: 'Nothing was charged.',
  unavailableDetail: 'Apple Pay is not available on this device.',
  sdkFailed: 'Apple Pay is not available: Apple\'s script {reason}.',
  validationFailed: 'Apple Pay could not be started: {reason}.',
  updateFailed: 'The total could not be updated: {reason}.',
  authorizeFailed: '{reason}',
  authorizeTimedOut: 'The shop did not answer in time. Your payment may still go through: check your order before paying again.',
  sessionFailed: 'Apple Pay could not open: {reason}.',
  timedOut: 'the shop did not answer in time',
  networkError: 'the network connection failed',
  alreadyPaid: 'This order is already paid.',
  closed: 'This payment request is {status}; ask the shop for a new one.',
};

/** `format('Add one {product}', {product: 'cider'})` → 'Add one cider'. */
export function format(template, values = {}) {
  return template.replace(/\{(\w+)\}/g, (match, key) => (key in values ? String(values[key]) : match));
}

/**
 * Versions this module can use: 3 added STATUS_FAILURE with ApplePayError; 12 added coupons;
 * 14 added recurring, deferred and automatic-reload payment requests.
 */
const MIN_VERSION = 3;
const MAX_VERSION = 14;
const COUPON_VERSION = 12;
export const AGREEMENT_VERSION = 14;

/** The request fields that carry an agreement, and the date members Apple Pay JS wants as Date objects. */
const AGREEMENTS = ['recurringPaymentRequest', 'deferredPaymentRequest', 'automaticReloadPaymentRequest'];
const LINE_DATES = ['recurringPaymentStartDate', 'recurringPaymentEndDate', 'deferredPaymentDate'];

/** Whether the request sets up a recurring, deferred or automatic-reload agreement. */
export function hasAgreement(serverRequest) {
  return AGREEMENTS.some((key) => serverRequest?.[key] != null);
}
const CAPABILITIES_TIMEOUT_MS = 3_000;

/**
 * How long a browser without its own Apple Pay (Chrome, Edge, Firefox) waits for Apple's SDK to
 * define ApplePaySession and <apple-pay-button> before the page says Apple Pay is unavailable;
 * `mount(…, {applePaySDKTimeoutMs})` changes it.
 */
export const SDK_TIMEOUT_MS = 5_000;

/** Apple's SDK's script element; with `integrity`, the browser runs only the bytes that hash says. */
function sdkScript(url, integrity) {
  const attributes = { src: url, crossorigin: 'anonymous', async: '' };
  if (integrity) attributes.integrity = integrity;
  return element('script', attributes);
}

/**
 * Adds Apple's SDK to the page and resolves `{ok: true}` once it has defined both ApplePaySession
 * and <apple-pay-button>, or `{ok: false, reason}` when the script fails or `timeoutMs` passes.
 */
export function loadSDK(url, timeoutMs = SDK_TIMEOUT_MS, integrity = null) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ ok: false, reason: `did not start within ${Math.ceil(timeoutMs / 1000)} s` }), timeoutMs);
    const finish = (result) => {
      clearTimeout(timer);
      resolve(result);
    };
    const script = sdkScript(url, integrity);
    script.addEventListener('error', () => finish({ ok: false, reason: 'could not be loaded' }));
    customElements.whenDefined('apple-pay-button').then(() => finish(
      typeof window.ApplePaySession === 'function' ? { ok: true } : { ok: false, reason: 'defined no ApplePaySession' }));
    document.head.append(script);
  });
}

/** The highest Apple Pay JS version the browser supports, or null. */
export function pickVersion(session) {
  if (typeof session?.supportsVersion !== 'function') return null;
  for (let version = MAX_VERSION; version >= MIN_VERSION; version -= 1) {
    try {
      if (session.supportsVersion(version)) return version;
    } catch {
      // A browser that throws for unknown versions: try the next one down.
    }
  }
  return null;
}

/**
 * `{available, version}`. Available only if ApplePaySession exists, supports a usable version,
 * `canMakePayments()` is true and, where the browser has it, `applePayCapabilities` does not say
 * "applePayUnsupported" (Apple: still show the button when no card is set up yet).
 */
export async function checkAvailability(merchantIdentifier) {
  const session = window.ApplePaySession;
  if (typeof session !== 'function') return { available: false, reason: 'no ApplePaySession' };
  const version = pickVersion(session);
  if (!version) return { available: false, reason: 'no supported version' };
  try {
    if (session.canMakePayments() !== true) return { available: false, reason: 'canMakePayments() is false' };
    if (typeof session.applePayCapabilities === 'function' && merchantIdentifier) {
      const capabilities = await Promise.race([
        session.applePayCapabilities(merchantIdentifier),
        new Promise((resolve) => setTimeout(() => resolve(null), CAPABILITIES_TIMEOUT_MS)),
      ]);
      if (capabilities?.paymentCredentialStatus === 'applePayUnsupported') {
        return { available: false, reason: 'applePayCapabilities: applePayUnsupported' };
      }
    }
  } catch (error) {
    // Safari throws from canMakePayments() on insecure pages and in some frames.
    return { available: false, reason: String(error?.message ?? error) };
  }
  return { available: true, version };
}

/**
 * The payment request for `version`: fields a version lacks are left out, as Safari would reject
 * them. An agreement's dates become Date objects (Apple Pay JS refuses strings there), and its
 * `tokenNotificationURL` is made absolute against the Orchard this module came from. Throws when
 * the version cannot show the agreement: paying without it would set up nothing.
 */
export function paymentRequestFor(serverRequest, version, tokenNotificationPath = null) {
  const request = structuredClone(serverRequest);
  if (version < COUPON_VERSION) {
    delete request.supportsCouponCode;
    delete request.couponCode;
  }
  if (request.couponCode == null) delete request.couponCode;
  if (hasAgreement(request) && version < AGREEMENT_VERSION) {
    throw new Error(`this browser's Apple Pay (version ${version}) cannot show a payment agreement`);
  }
  for (const key of AGREEMENTS) {
    const agreement = request[key];
    if (agreement == null) continue;
    for (const line of [agreement.regularBilling, agreement.trialBilling, agreement.deferredBilling, agreement.automaticReloadBilling]) {
      for (const field of LINE_DATES) if (line?.[field] != null) line[field] = new Date(line[field]);
    }
    if (agreement.freeCancellationDate != null) agreement.freeCancellationDate = new Date(agreement.freeCancellationDate);
    if (tokenNotificationPath) agreement.tokenNotificationURL = new URL(tokenNotificationPath, BASE).href;
    for (const field of Object.keys(agreement)) if (agreement[field] == null) delete agreement[field];
  }
  return request;
}

/** What Apple Pay reveals of the address before payment: enough for a shop to price delivery. */
function redactedAddress(contact) {
  return {
    countryCode: contact?.countryCode ?? null,
    postalCode: contact?.postalCode ?? null,
    locality: contact?.locality ?? null,
    administrativeArea: contact?.administrativeArea ?? null,
  };
}

function applePayError({ code = 'unknown', contactField, message = '' }) {
  return typeof window.ApplePayError === 'function'
    ? new window.ApplePayError(code, contactField, message)
    : { code, contactField, message };
}

function sheetUpdate(update) {
  const result = { newTotal: update.newTotal, newLineItems: update.newLineItems, errors: (update.errors ?? []).map(applePayError) };
  if (update.newShippingMethods) result.newShippingMethods = update.newShippingMethods;
  return result;
}

/**
 * Opens the sheet for `order` ({orderId, paymentRequest}) and runs it to an outcome. Must be
 * called synchronously from the button's click handler: Safari only creates sessions inside a
 * user gesture.
 *
 * `on.totals(update)` runs when the server reprices, `on.attemptFailed(message)` when an
 * authorization is refused (the sheet stays open for another try), and `on.outcome(status,
 * detail, answer)` once, with status success | failure | cancelled.
 */
export function startPayment({ order, version, on, t = defaultStrings }) {
  const ApplePaySession = window.ApplePaySession;
  const session = new ApplePaySession(version, paymentRequestFor(order.paymentRequest, version, order.tokenNotificationPath));
  const base = `api/orders/${encodeURIComponent(order.orderId)}`;
  let finished = false;
  let lastFailure = null;

  const reason = (error) => {
    if (error instanceof ApiError) {
      if (error.timedOut) return t.timedOut;
      if (error.status === 0) return t.networkError;
    }
    return error?.message ?? String(error);
  };

  const finish = (status, detail, answer) => {
    if (finished) return;
    finished = true;
    on.outcome(status, detail, answer);
  };

  // Something the shopper cannot fix on the sheet: close it and say why.
  const abort = (message) => {
    finish('failure', message);
    try {
      session.abort();
    } catch {
      // Already closed.
    }
  };

  session.onvalidatemerchant = async (event) => {
    try {
      const merchantSession = await postJSON('api/apple-pay/session', { validationURL: event.validationURL });
      if (!finished) session.completeMerchantValidation(merchantSession);
    } catch (error) {
      abort(format(t.validationFailed, { reason: reason(error) }));
    }
  };

  const repriced = (path, body, complete) => async () => {
    try {
      const update = await postJSON(`${base}/${path}`, body);
      if (finished) return;
      on.totals(update);
      complete(sheetUpdate(update));
    } catch (error) {
      abort(format(t.updateFailed, { reason: reason(error) }));
    }
  };

  session.onpaymentmethodselected = (event) =>
    repriced('payment-method', { type: event.paymentMethod?.type ?? null }, (u) =>
      session.completePaymentMethodSelection({ newTotal: u.newTotal, newLineItems: u.newLineItems }))();

  session.onshippingcontactselected = (event) =>
    repriced('shipping-contact', redactedAddress(event.shippingContact), (u) =>
      session.completeShippingContactSelection(u))();

  session.onshippingmethodselected = (event) =>
    repriced('shipping-method', { identifier: event.shippingMethod?.identifier ?? '' }, (u) =>
      session.completeShippingMethodSelection(u))();

  session.oncouponcodechanged = (event) =>
    repriced('coupon', { couponCode: event.couponCode ?? '' }, (u) => session.completeCouponCodeChange(u))();

  session.onpaymentauthorized = async (event) => {
    let answer;
    try {
      answer = await postJSON('api/apple-pay/authorize', { orderId: order.orderId, payment: event.payment });
    } catch (error) {
      const body = error instanceof ApiError ? error.body : null;
      answer = body?.status
        ? body
        : { status: 'failure', errors: [{ code: 'unknown', message: error?.timedOut ? t.authorizeTimedOut : reason(error) }] };
    }
    if (answer.status === 'success') {
      session.completePayment({ status: ApplePaySession.STATUS_SUCCESS ?? 0, errors: [] });
      finish('success', null, answer);
      return;
    }
    const errors = Array.isArray(answer.errors) && answer.errors.length ? answer.errors : [{ code: 'unknown', message: '' }];
    session.completePayment({ status: ApplePaySession.STATUS_FAILURE ?? 1, errors: errors.map(applePayError) });
    // The sheet stays open for another try; the page shows why this one failed.
    const messages = errors.map((e) => e.message).filter(Boolean).join(' ');
    lastFailure = format(t.authorizeFailed, { reason: messages ? messages[0].toUpperCase() + messages.slice(1) : t.failureTitle });
    on.attemptFailed(lastFailure);
  };

  session.oncancel = () => {
    if (lastFailure) finish('failure', lastFailure);
    else finish('cancelled', t.cancelledDetail);
  };

  session.begin();
  return session;
}

/** A DOM element with attributes (`text` sets its text) and children; pages may use it too. */
export function element(tag, attributes = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === 'text') node.textContent = value;
    else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

/** A button drawn by the browser (Safari's -apple-pay-button), plain black elsewhere; a shop's class replaces the look. */
function cssButton(t, buttonClass, onPay) {
  const button = element('button', {
    type: 'button', class: buttonClass ?? 'orchard-apple-pay-button', 'data-testid': 'apple-pay-button', 'aria-label': t.payButton,
    lang: t.locale,
  }, [element('span', { class: buttonClass ? `${buttonClass}-text` : 'orchard-apple-pay-button-text', text: t.payButton })]);
  if (!buttonClass) {
    // Set through CSSOM, which a strict Content-Security-Policy (no inline styles) allows.
    const look = {
      'min-height': '44px', 'min-width': '200px', 'border-radius': '8px', border: '0', background: '#000', color: '#fff',
      font: '600 16px -apple-system, system-ui, sans-serif', cursor: 'pointer',
    };
    for (const [property, value] of Object.entries(look)) button.style.setProperty(property, value);
    if (CSS.supports('-webkit-appearance', '-apple-pay-button')) {
      button.style.setProperty('-webkit-appearance', '-apple-pay-button');
      button.firstChild.style.setProperty('visibility', 'hidden');
    }
  }
  button.addEventListener('click', onPay);
  return button;
}

/** Apple's <apple-pay-button>, once Apple's SDK has defined it. */
function sdkButton(t, onPay) {
  const button = element('apple-pay-button', {
    buttonstyle: 'black', type: 'buy', locale: t.locale, 'data-testid': 'apple-pay-button', role: 'button', tabindex: '0',
    'aria-label': t.payButton,
  });
  button.addEventListener('click', onPay);
  button.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      onPay();
    }
  });
  return button;
}

/** One mounted button: its state, the page's callbacks, and the session it starts. */
class Checkout {
  constructor(container, options) {
    this.container = container;
    this.options = options;
    this.t = { ...defaultStrings, ...(options.strings ?? {}) };
    this.order = null;
    this.version = null;
    this.available = false;
    this.paying = false;
    this.done = false;
    this.button = null;
    this.onPay = () => this.pay();
  }

  emit(name, detail, callback) {
    callback?.(detail);
    this.container.dispatchEvent(new CustomEvent(`orchard:${name}`, { detail, bubbles: true }));
  }

  outcome(status, detail, answer) {
    this.paying = false;
    this.done = status === 'success' || status === 'unavailable';
    this.refresh();
    const reported = {
      status, detail, orderId: answer?.orderId ?? null, paymentId: answer?.paymentId ?? null, reason: answer?.reason ?? null,
    };
    this.emit('outcome', reported, this.options.onOutcome);
  }

  currentOrder() {
    return this.options.order ? this.options.order() : this.order;
  }

  usable() {
    return this.available && this.currentOrder() != null && !this.paying && !this.done;
  }

  refresh() {
    const button = this.button;
    if (!button) return;
    button.setAttribute('aria-disabled', String(!this.usable()));
    if (button instanceof HTMLButtonElement) button.disabled = !this.usable();
    button.hidden = this.done;
  }

  pay() {
    if (!this.usable()) return;
    const { t, options } = this;
    try {
      startPayment({
        order: this.currentOrder(),
        version: this.version,
        t,
        on: {
          totals: (update) => this.emit('totals', update, options.onTotals),
          attemptFailed: (message) => this.emit('attemptfailed', { message }, options.onAttemptFailed),
          outcome: (status, detail, answer) => this.outcome(status, detail, answer),
        },
      });
    } catch (error) {
      this.emit('outcome', { status: 'failure', detail: format(t.sessionFailed, { reason: error?.message ?? String(error) }) },
        options.onOutcome);
      return;
    }
    this.paying = true;
    this.refresh();
    this.emit('start', { orderId: this.currentOrder().orderId }, options.onStart);
  }

  show(button) {
    const hadFocus = this.button && document.activeElement === this.button;
    this.button = button;
    this.container.replaceChildren(button);
    this.refresh();
    if (hadFocus) button.focus();
  }

  showButton() {
    this.show(customElements.get('apple-pay-button') ? sdkButton(this.t, this.onPay) : cssButton(this.t, this.options.buttonClass, this.onPay));
  }

  /** The shop's payment request, by its client secret; false when there is nothing to pay. */
  async open() {
    let opened;
    try {
      opened = await postJSON('api/payment-requests/open', { clientSecret: this.options.clientSecret });
    } catch (error) {
      this.outcome('failure', error.message);
      return false;
    }
    this.merchantIdentifier = opened.merchantIdentifier;
    this.simulatedSheet ??= opened.simulatedSheet;
    this.order = { orderId: opened.id, paymentRequest: opened.paymentRequest, tokenNotificationPath: opened.tokenNotificationPath };
    this.emit('ready', opened, this.options.onReady);
    if (opened.status === 'requires_payment') return true;
    const paid = opened.status === 'paid';
    const payment = opened.payments?.find((p) => p.state === 'authorized' || p.state === 'settled');
    this.outcome(paid ? 'success' : 'failure', paid ? this.t.alreadyPaid : format(this.t.closed, { status: opened.status }),
      { orderId: opened.id, paymentId: payment?.id });
    return false;
  }

  /** Safari: loads Apple's SDK without ever waiting for it, the module's own button already there. */
  loadAppleSDK(url) {
    customElements.whenDefined('apple-pay-button').then(() => {
      if (!this.done && !this.paying) this.show(sdkButton(this.t, this.onPay));
    });
    const script = sdkScript(url, this.options.applePaySDKIntegrity);
    script.addEventListener('error', () => console.info('Apple Pay JS SDK did not load; the page keeps its own button.'));
    document.head.append(script);
  }

  async start() {
    this.merchantIdentifier = this.options.merchantIdentifier;
    this.simulatedSheet = this.options.simulatedSheet;
    if (this.options.clientSecret && !(await this.open())) return;
    // Safari has its own ApplePaySession. Elsewhere it exists only once Apple's SDK has run, so
    // the SDK comes first and availability is asked after it.
    const native = 'ApplePaySession' in window;
    let sdkFailure = null;
    if (this.options.applePaySDK && !native) {
      const loaded = await loadSDK(
        this.options.applePaySDK, this.options.applePaySDKTimeoutMs ?? SDK_TIMEOUT_MS, this.options.applePaySDKIntegrity);
      if (!loaded.ok) sdkFailure = loaded.reason;
    }
    if (this.simulatedSheet && !('ApplePaySession' in window)) {
      try {
        await import(new URL(this.simulatedSheet.replace(/^\//, ''), BASE).href);
      } catch (error) {
        console.warn('The demo sheet did not load', error);
      }
    }
    if (sdkFailure && !('ApplePaySession' in window)) {
      this.outcome('unavailable', format(this.t.sdkFailed, { reason: sdkFailure }), { reason: sdkFailure });
      return;
    }
    const availability = await checkAvailability(this.merchantIdentifier);
    this.available = availability.available;
    this.version = availability.version ?? null;
    if (this.available && this.order && hasAgreement(this.order.paymentRequest) && this.version < AGREEMENT_VERSION) {
      // An agreement the sheet cannot show must not become a one-off payment.
      this.available = false;
    }
    if (!this.available) {
      this.outcome('unavailable', this.t.unavailableDetail);
      return;
    }
    this.showButton();
    if (this.options.applePaySDK && native) this.loadAppleSDK(this.options.applePaySDK);
  }
}

/**
 * Puts the Apple Pay button in `container` and runs payments from it.
 *
 * Options: `clientSecret` (a payment request from the shop's backend) or `order` (a function
 * returning the page's current `{orderId, paymentRequest}`, or null while there is none);
 * `merchantIdentifier` (with `order`), `applePaySDK` (a URL: use Apple's <apple-pay-button>, and
 * outside Safari wait for it up to `applePaySDKTimeoutMs`, 5000 by default; `applePaySDKIntegrity`:
 * its SRI hash, for a pinned version),
 * `buttonClass`, `strings`, and the callbacks `onReady(paymentRequest)`, `onStart({orderId})`,
 * `onTotals(update)`, `onAttemptFailed({message})` and `onOutcome({status, detail, orderId,
 * paymentId, reason})` with status success | failure | cancelled | unavailable (`reason`: why
 * Apple's SDK could not be used, when that is why). Each is also dispatched
 * on `container` as `orchard:ready`, `orchard:start`, `orchard:totals`, `orchard:attemptfailed`
 * and `orchard:outcome`.
 *
 * Returns a controller: `available`, `button`, `refresh()` (the page's order changed) and
 * `reset()` (show the button again for a new order after a payment).
 */
export async function mount(container, options = {}) {
  const checkout = new Checkout(container, options);
  await checkout.start();
  return {
    get available() { return checkout.available; },
    get button() { return checkout.button; },
    refresh: () => checkout.refresh(),
    reset: () => {
      checkout.done = false;
      checkout.showButton();
    },
  };
}
