// Orchard's Apple Pay button for any checkout page: an ES module (with its siblings), no dependencies.
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
// The sheet runs on ApplePaySession (orchard-session.js) or, with `mode: 'paymentrequest'`, on the
// Payment Request API (orchard-payment-request.js); every number comes from the server.
// `mountWallets` shows Apple Pay's and Google Pay's buttons for one payment request (orchard-wallets.js).

import { WalletButton, format } from './orchard-api.js';
import { AGREEMENT_VERSION, hasAgreement, pickVersion, startPayment } from './orchard-session.js';
import { canUsePaymentRequest, startPaymentRequest } from './orchard-payment-request.js';
import { GooglePayCheckout } from './orchard-google-pay.js';
import { Wallets } from './orchard-wallets.js';

export * from './orchard-api.js';
export * from './orchard-session.js';
export * from './orchard-payment-request.js';
export * from './orchard-google-pay.js';
export * from './orchard-strings.js';
export * from './orchard-wallets.js';

const BASE = new URL('./', import.meta.url);
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
class Checkout extends WalletButton {
  constructor(container, options) {
    super(container, options);
    this.version = null;
    this.onPay = () => this.pay();
  }

  pay() {
    if (!this.usable()) return;
    const { t, options } = this;
    const order = this.currentOrder();
    // Payment Request where the page asked for it and the browser has it; ApplePaySession otherwise (Firefox).
    const api = options.mode === 'paymentrequest' && canUsePaymentRequest() ? 'paymentrequest' : 'session';
    const start = api === 'paymentrequest' ? startPaymentRequest : startPayment;
    try {
      start({
        order,
        version: this.version,
        merchantIdentifier: this.merchantIdentifier,
        t,
        on: {
          totals: (update) => {
            // Google Pay's payment names the price version its sheet showed: keep the order's current.
            if (Number.isInteger(update?.priceVersion)) order.priceVersion = update.priceVersion;
            this.emit('totals', update, options.onTotals);
          },
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
    this.emit('start', { orderId: order.orderId, api }, options.onStart);
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
    if (this.options.clientSecret) {
      const opened = await this.openRequest();
      if (!opened) return;
      this.merchantIdentifier = opened.merchantIdentifier;
      this.simulatedSheet ??= opened.simulatedSheet;
    }
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
 * `mode` ('session', the default: Apple Pay JS's ApplePaySession; or 'paymentrequest': the W3C
 * Payment Request API with Apple Pay's method, where the browser has it, and ApplePaySession
 * where it does not, as in Firefox), `buttonClass`, `locale` and `strings` (the module's messages
 * in the shipped set for `locale`, else `strings.locale`, else the page's <html lang>; `strings`
 * overrides single messages), and the
 * callbacks `onReady(paymentRequest)`, `onStart({orderId, api})` (api: the one used),
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
  checkMode('mount', options);
  const checkout = new Checkout(container, options);
  await checkout.start();
  return checkout.controller(() => {
    checkout.done = false;
    checkout.showButton();
  });
}

function checkMode(name, options) {
  if (![undefined, 'session', 'paymentrequest'].includes(options.mode)) {
    throw new TypeError(`${name}: mode must be 'session' or 'paymentrequest', not ${JSON.stringify(options.mode)}`);
  }
}

/**
 * Apple Pay's button and, where the merchant takes Google Pay, Google's below it, for the payment
 * request `clientSecret` names, opened once. One sheet at a time: while one wallet's is open the
 * other's button waits, and once one has paid neither stays.
 *
 * Options: `clientSecret`; `googlePayContainer` (an element of the page's for Google's button;
 * by default the module appends its place in `container`, below Apple's), `googlePay: false` (Apple
 * Pay only), `googlePayButtonClass`; `locale` (the shipped strings' language; by default
 * `strings.locale`, else the page's <html lang>) and `strings` (single messages over them);
 * Apple Pay's `mode`, `applePaySDK`, `applePaySDKTimeoutMs`, `applePaySDKIntegrity` and
 * `buttonClass`, as `mount` takes them; and one set of callbacks, each detail with `wallet`
 * ('applePay' or 'googlePay'; null for what concerns the request): `onReady(openedRequest)`,
 * `onStart({wallet, orderId, api})`, `onTotals(update)`, `onAttemptFailed({wallet, message})`,
 * `onUnavailable({wallet, detail, reason})` (that wallet cannot pay here) and
 * `onOutcome({status, wallet, detail, orderId, paymentId, reason})`: `success` (with the wallet
 * that paid), `failure` or `cancelled`, and `unavailable` once, when no wallet offered can pay
 * (`reasons` by wallet). Each is also dispatched on `container` as `orchard:ready`,
 * `orchard:start`, `orchard:totals`, `orchard:attemptfailed`, `orchard:unavailable` and
 * `orchard:outcome`.
 *
 * Returns a controller: `available` (a button is shown), `wallets` (those shown) and `refresh()`.
 */
export async function mountWallets(container, options = {}) {
  checkMode('mountWallets', options);
  const wallets = new Wallets(container, options, {
    applePay: (place, walletOptions) => new Checkout(place, walletOptions),
    googlePay: (place, walletOptions) => new GooglePayCheckout(place, walletOptions),
  });
  await wallets.start();
  return wallets.controller();
}
