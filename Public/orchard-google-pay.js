// Google Pay beside Apple Pay, on the same server-priced order: Google's pay.js (a classic script,
// loaded with a deadline), its button where isReadyToPay says so, and a PaymentDataRequest built
// from the order's Apple Pay payment request. The sheet's changes go to the same repricing calls
// the Apple Pay sheet makes, and the payment to POST /api/google-pay/authorize with the order's
// price version the sheet showed. Only what Google documents for PaymentsClient is used.

import { ApiError, WalletButton, format, orderCalls, postJSON, reasonOf } from './orchard-api.js';
import { redactedAddress } from './orchard-session.js';
import { refusalMessage } from './orchard-strings.js';

const BASE = new URL('./', import.meta.url);
const API_VERSION = { apiVersion: 2, apiVersionMinor: 0 };

/** How long the page waits for Google's script to define PaymentsClient; the server's `scriptTimeoutMs` replaces it. */
export const GOOGLE_PAY_TIMEOUT_MS = 5_000;

/** The server's refusals of the token itself: the shopper may pay again with another card. */
const PAYMENT_DATA_INVALID = new Set(['invalid_token', 'invalid_json', 'payment_failed', 'replayed_payment']);

/** Where the script is: an https URL as given, a path on this server relative to this module (Orchard may sit under a prefix). */
function scriptURL(script) {
  return /^https:\/\//.test(script) ? script : new URL(script.replace(/^\//, ''), BASE).href;
}

/**
 * Adds Google's pay.js to the page and resolves `{ok: true}` once it has defined
 * `google.payments.api.PaymentsClient`, or `{ok: false, reason}` when the script fails or
 * `timeoutMs` passes.
 */
export function loadGooglePay(script, timeoutMs = GOOGLE_PAY_TIMEOUT_MS) {
  const defined = () => typeof window.google?.payments?.api?.PaymentsClient === 'function';
  if (defined()) return Promise.resolve({ ok: true });
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ ok: false, reason: `did not start within ${Math.ceil(timeoutMs / 1000)} s` }), timeoutMs);
    const finish = (result) => {
      clearTimeout(timer);
      resolve(result);
    };
    const node = document.createElement('script');
    node.src = scriptURL(script);
    node.async = true;
    node.addEventListener('error', () => finish({ ok: false, reason: 'could not be loaded' }));
    node.addEventListener('load', () => finish(defined() ? { ok: true } : { ok: false, reason: 'defined no PaymentsClient' }));
    document.head.append(node);
  });
}

/** `IsReadyToPayRequest`: the server's card methods, without their tokenization. */
export function isReadyToPayRequest(settings) {
  return {
    ...API_VERSION,
    allowedPaymentMethods: settings.allowedPaymentMethods.map(({ type, parameters }) => ({ type, parameters })),
  };
}

function money(amount, currencyCode, locale) {
  try {
    return new Intl.NumberFormat(locale, { style: 'currency', currency: currencyCode }).format(amount);
  } catch {
    return `${amount} ${currencyCode}`;
  }
}

/**
 * `TransactionInfo` from the server's total and lines: always FINAL, the server's decimal
 * strings unchanged. The total's label is the server's, as Apple Pay's sheet shows it (the
 * request's `totalLabel`, else the merchant's name); `totalLabel` only where it has none. A
 * negative line is the coupon's discount, the selected delivery's line its shipping option.
 */
export function transactionInfo(total, lineItems, { currencyCode, countryCode, shippingLabel, totalLabel = 'Total' }) {
  const label = typeof total.label === 'string' && total.label.trim() ? total.label : totalLabel;
  return {
    totalPriceStatus: 'FINAL',
    totalPrice: total.amount,
    totalPriceLabel: label,
    currencyCode,
    countryCode,
    displayItems: lineItems.map((item) => ({
      label: item.label,
      type: item.amount.startsWith('-') ? 'DISCOUNT' : item.label === shippingLabel ? 'SHIPPING_OPTION' : 'LINE_ITEM',
      price: item.amount,
      status: 'FINAL',
    })),
  };
}

/** `ShippingOptionParameters` from the server's shipping methods, `selected` preselected. */
export function shippingOptionParameters(methods, selected, currencyCode, locale) {
  return {
    defaultSelectedOptionId: selected ?? methods[0]?.identifier,
    shippingOptions: methods.map((method) => ({
      id: method.identifier,
      label: `${money(method.amount, currencyCode, locale)}: ${method.label}`,
      description: method.detail,
    })),
  };
}

/** Whether the order asks for a delivery address and offers shipping methods. */
function shipping(serverRequest) {
  return {
    address: (serverRequest.requiredShippingContactFields ?? []).includes('postalAddress'),
    options: (serverRequest.shippingMethods ?? []).length > 0,
  };
}

/**
 * `PaymentDataRequest` for the order (`{orderId, priceVersion, paymentRequest}` from
 * `POST /api/orders`), with the callbacks the page answers: the address and the shipping option
 * when the order ships, and the authorization always.
 */
export function paymentDataRequest(settings, order, locale = 'en', totalLabel = 'Total') {
  const request = order.paymentRequest;
  const ships = shipping(request);
  const methods = request.shippingMethods ?? [];
  const intents = [];
  const data = {
    ...API_VERSION,
    merchantInfo: settings.merchantInfo,
    allowedPaymentMethods: settings.allowedPaymentMethods,
    transactionInfo: transactionInfo(request.total, request.lineItems, {
      currencyCode: request.currencyCode, countryCode: request.countryCode, shippingLabel: methods[0]?.label, totalLabel,
    }),
  };
  if (ships.address || ships.options) {
    data.shippingAddressRequired = true;
    data.shippingAddressParameters = { phoneNumberRequired: false };
    intents.push('SHIPPING_ADDRESS');
  }
  if (ships.options) {
    data.shippingOptionRequired = true;
    data.shippingOptionParameters = shippingOptionParameters(methods, methods[0]?.identifier, request.currencyCode, locale);
    intents.push('SHIPPING_OPTION');
  }
  if ((request.requiredShippingContactFields ?? []).includes('email')) data.emailRequired = true;
  data.callbackIntents = [...intents, 'PAYMENT_AUTHORIZATION'];
  return data;
}

/** Apple Pay's error from a repricing as Google's `PaymentDataError`. */
function dataError(error, intent) {
  const reason = error.code === 'addressUnserviceable' ? 'SHIPPING_ADDRESS_UNSERVICEABLE'
    : error.code === 'shippingContactInvalid' ? 'SHIPPING_ADDRESS_INVALID' : 'OTHER_ERROR';
  return { reason, message: error.message ?? '', intent };
}

/** One sheet: the order it pays, the price version the sheet shows, and its outcome. */
class Session {
  constructor(order, settings, t, on) {
    this.order = order;
    this.priceVersion = order.priceVersion;
    this.request = order.paymentRequest;
    this.methods = this.request.shippingMethods ?? [];
    this.selected = this.methods[0]?.identifier ?? null;
    this.calls = orderCalls(order, t);
    this.t = t;
    this.on = on;
    this.answer = null;
    this.lastFailure = null;
  }

  /** `onPaymentDataChanged`: the server reprices for the address or the shipping option. */
  async changed(data) {
    const trigger = data.callbackTrigger;
    const intent = trigger === 'SHIPPING_OPTION' ? 'SHIPPING_OPTION' : 'SHIPPING_ADDRESS';
    try {
      let update;
      if (trigger === 'SHIPPING_OPTION') update = await this.calls.shippingMethod(data.shippingOptionData?.id);
      else if (data.shippingAddress) update = await this.calls.shippingContact(redactedAddress(data.shippingAddress));
      else return {};
      return this.applied(update, intent, trigger === 'SHIPPING_OPTION' ? data.shippingOptionData?.id : null);
    } catch (error) {
      return { error: { reason: 'OTHER_ERROR', message: format(this.t.updateFailed, { reason: reasonOf(error, this.t) }), intent } };
    }
  }

  /** The server's update as a `PaymentDataRequestUpdate`, its price version kept for the payment. */
  applied(update, intent, chosen) {
    this.priceVersion = update.priceVersion ?? this.priceVersion;
    this.order.priceVersion = this.priceVersion;
    if (update.newShippingMethods) {
      this.methods = update.newShippingMethods;
      this.selected = this.methods[0]?.identifier ?? null;
    } else if (chosen && !(update.errors ?? []).length) {
      this.selected = chosen;
    }
    this.on.totals(update);
    const { currencyCode, countryCode } = this.request;
    const shippingLabel = this.methods.find((method) => method.identifier === this.selected)?.label;
    const result = {
      newTransactionInfo: transactionInfo(update.newTotal, update.newLineItems, {
        currencyCode, countryCode, shippingLabel, totalLabel: this.t.total,
      }),
    };
    if (update.newShippingMethods && shipping(this.request).options) {
      result.newShippingOptionParameters = shippingOptionParameters(this.methods, this.selected, currencyCode, this.t.locale);
    }
    const error = (update.errors ?? [])[0];
    if (error) result.error = dataError(error, intent);
    return result;
  }

  /** `onPaymentAuthorized`: the order, the price version shown and Google's PaymentData to Orchard. */
  async authorized(paymentData) {
    try {
      this.answer = await postJSON('api/google-pay/authorize', {
        orderId: this.order.orderId, priceVersion: this.priceVersion, paymentData,
      });
      return { transactionState: 'SUCCESS' };
    } catch (error) {
      const code = error instanceof ApiError ? error.body?.error?.code : null;
      const refused = error instanceof ApiError && error.status !== 503 && error.status !== 0 ? refusalMessage(code, this.t) : null;
      const reason = error?.timedOut ? this.t.authorizeTimedOut : refused ?? reasonOf(error, this.t);
      const message = format(this.t.authorizeFailed, { reason: reason ? reason[0].toUpperCase() + reason.slice(1) : this.t.failureTitle });
      this.lastFailure = message;
      this.on.attemptFailed(message);
      return {
        transactionState: 'ERROR',
        error: { reason: PAYMENT_DATA_INVALID.has(code) ? 'PAYMENT_DATA_INVALID' : 'OTHER_ERROR', message, intent: 'PAYMENT_AUTHORIZATION' },
      };
    }
  }
}

/** One mounted Google Pay button: its client, its state, the page's callbacks (mountWallets makes one too). */
export class GooglePayCheckout extends WalletButton {
  constructor(container, options) {
    super(container, options);
    this.settings = options.settings;
    this.client = null;
    this.session = null;
  }

  /** Google's button is a <button> inside createButton's container: the page's wrapper around both. */
  refresh() {
    super.refresh();
    const usable = this.usable();
    for (const inner of this.button?.querySelectorAll('button') ?? []) inner.disabled = !usable;
  }

  outcome(status, detail, answer) {
    this.session = null;
    super.outcome(status, detail, answer);
  }

  /** Opens Google's sheet: called in the button's click, as Google opens its sheet only in a user gesture. */
  pay() {
    if (!this.usable()) return;
    const { t, options } = this;
    const order = this.currentOrder();
    const session = new Session(order, this.settings, t, {
      totals: (update) => this.emit('totals', update, options.onTotals),
      attemptFailed: (message) => this.emit('attemptfailed', { message }, options.onAttemptFailed),
    });
    let loading;
    try {
      loading = this.client.loadPaymentData(paymentDataRequest(this.settings, order, t.locale, t.total));
    } catch (error) {
      this.emit('outcome', { status: 'failure', detail: format(t.googlePayFailed, { reason: error?.message ?? String(error) }) },
        options.onOutcome);
      return;
    }
    this.session = session;
    this.paying = true;
    this.refresh();
    this.emit('start', { orderId: order.orderId, api: 'googlepay' }, options.onStart);
    loading.then(
      () => this.outcome('success', null, session.answer),
      (error) => {
        if (error?.statusCode === 'CANCELED') {
          if (session.lastFailure) this.outcome('failure', session.lastFailure);
          else this.outcome('cancelled', t.cancelledDetail);
          return;
        }
        this.outcome('failure', format(t.googlePayFailed, { reason: error?.statusMessage ?? error?.message ?? String(error) }));
      });
  }

  showButton() {
    const inner = this.client.createButton({
      onClick: () => this.pay(),
      buttonColor: 'black',
      buttonType: 'buy',
      buttonSizeMode: 'fill',
      // Google takes a language (ISO 639-1), not a tag with a region.
      buttonLocale: String(this.t.locale).split(/[-_]/)[0].toLowerCase(),
      allowedPaymentMethods: this.settings.allowedPaymentMethods,
    });
    const button = document.createElement('div');
    button.className = this.options.buttonClass ?? 'orchard-google-pay-button';
    button.dataset.testid = 'google-pay-button';
    button.setAttribute('aria-label', this.t.googlePayButton);
    button.append(inner);
    this.button = button;
    this.container.replaceChildren(button);
    this.refresh();
  }

  async start() {
    if (this.options.clientSecret) {
      const opened = await this.openRequest();
      if (!opened) return;
      this.settings = opened.googlePay;
    }
    const { settings, t } = this;
    if (!settings) {
      this.outcome('unavailable', t.googlePayUnavailable, { reason: 'the merchant does not take Google Pay' });
      return;
    }
    const loaded = await loadGooglePay(settings.script, settings.scriptTimeoutMs ?? GOOGLE_PAY_TIMEOUT_MS);
    if (!loaded.ok) {
      this.outcome('unavailable', format(t.googlePayScriptFailed, { reason: loaded.reason }), { reason: loaded.reason });
      return;
    }
    let ready;
    try {
      this.client = new window.google.payments.api.PaymentsClient({
        environment: settings.environment,
        merchantInfo: settings.merchantInfo,
        paymentDataCallbacks: {
          onPaymentDataChanged: (data) => this.session?.changed(data) ?? {},
          onPaymentAuthorized: (paymentData) => this.session?.authorized(paymentData)
            ?? { transactionState: 'ERROR', error: { reason: 'OTHER_ERROR', message: t.failureTitle, intent: 'PAYMENT_AUTHORIZATION' } },
        },
      });
      ready = await this.client.isReadyToPay(isReadyToPayRequest(settings));
    } catch (error) {
      const reason = error?.statusMessage ?? error?.message ?? String(error);
      this.outcome('unavailable', t.googlePayUnavailable, { reason });
      return;
    }
    if (ready?.result !== true) {
      this.outcome('unavailable', t.googlePayUnavailable, { reason: 'isReadyToPay: false' });
      return;
    }
    this.available = true;
    this.showButton();
  }
}

/**
 * Puts Google's button in `container` and runs Google Pay payments from it.
 *
 * Options: `clientSecret` (a payment request from the shop's backend: its `googlePay` settings,
 * order and price version come with it), or `settings` (the `googlePay` of `GET /api/checkout`:
 * `script`, `scriptTimeoutMs`, `environment`, `merchantInfo`, `allowedPaymentMethods`) and `order`
 * (a function returning the page's current `{orderId, priceVersion, paymentRequest}`, or null
 * while there is none),
 * `buttonClass`, `strings`, and the callbacks `onStart({orderId, api: 'googlepay'})`,
 * `onTotals(update)`, `onAttemptFailed({message})` and `onOutcome({status, detail, orderId,
 * paymentId, reason})` with status success | failure | cancelled | unavailable (`reason`: why
 * Google's script or `isReadyToPay` could not be used). Each is also dispatched on `container`
 * as `orchard:start`, `orchard:totals`, `orchard:attemptfailed` and `orchard:outcome`.
 *
 * Returns a controller: `available`, `button`, `refresh()` (the page's order changed) and
 * `reset()` (show the button again for a new order after a payment).
 */
export async function mountGooglePay(container, options) {
  const checkout = new GooglePayCheckout(container, options);
  await checkout.start();
  return checkout.controller(() => {
    checkout.done = !checkout.available;
    checkout.refresh();
  });
}
