// The calls Orchard's checkout module makes to the Orchard it was loaded from, the shopper-facing
// strings, and the steps both ways of paying share (ApplePaySession in orchard-session.js, the
// Payment Request API in orchard-payment-request.js). Every URL is relative to this module.

import { refusalMessage, shippedStrings, shopperStrings } from './orchard-strings.js';

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

/** The English messages the shopper may see (orchard-strings.js has every set); `mount(…, {strings})` overrides any of them. */
export const defaultStrings = shippedStrings.en;

/** `format('Add one {product}', {product: 'cider'})` → 'Add one cider'. */
export function format(template, values = {}) {
  return template.replace(/\{(\w+)\}/g, (match, key) => (key in values ? String(values[key]) : match));
}

/**
 * Why a call failed, in words for the shopper: a 503 (the shop's database or Apple busy or away)
 * asks them to retry; another refusal is the server's (English) message, or the set's `shopRefused`.
 */
export function reasonOf(error, t = defaultStrings) {
  if (error instanceof ApiError) {
    if (error.timedOut) return t.timedOut;
    if (error.status === 0) return t.networkError;
    if (error.status === 503) return t.retryShortly;
    if (t.shopRefused) return t.shopRefused;
  }
  return error?.message ?? String(error);
}

/**
 * The server calls one payment makes, whichever browser API runs the sheet: the merchant session,
 * the repricing on each change the shopper makes, and the authorization. `authorize` never
 * throws: a call that failed becomes `{status: 'failure', errors}`, as the server would answer.
 */
export function orderCalls(order, t = defaultStrings) {
  const base = `api/orders/${encodeURIComponent(order.orderId)}`;
  return {
    merchantSession: (validationURL) => postJSON('api/apple-pay/session', { validationURL }),
    paymentMethod: (type) => postJSON(`${base}/payment-method`, { type: type ?? null }),
    shippingContact: (address) => postJSON(`${base}/shipping-contact`, address),
    shippingMethod: (identifier) => postJSON(`${base}/shipping-method`, { identifier: identifier ?? '' }),
    coupon: (couponCode) => postJSON(`${base}/coupon`, { couponCode: couponCode ?? '' }),
    async authorize(payment) {
      try {
        return await postJSON('api/apple-pay/authorize', { orderId: order.orderId, payment });
      } catch (error) {
        const body = error instanceof ApiError ? error.body : null;
        if (body?.status) return body;
        return { status: 'failure', errors: [{ code: 'unknown', message: error?.timedOut ? t.authorizeTimedOut : reasonOf(error, t) }] };
      }
    },
  };
}

/**
 * A refused authorization's errors (at least one) and the sentence the page shows for them: the
 * server's words, or where the strings translate refusals, theirs for its error code (also on
 * the sheet, for errors that name no field).
 */
export function refusal(answer, t = defaultStrings) {
  let errors = Array.isArray(answer.errors) && answer.errors.length ? answer.errors : [{ code: 'unknown', message: '' }];
  const translated = refusalMessage(answer.error?.code, t);
  if (translated) errors = errors.map((e) => (e?.code === 'unknown' || !e?.code ? { ...e, message: translated } : e));
  const messages = translated ?? errors.map((e) => e?.message).filter((m) => typeof m === 'string' && m).join(' ');
  const message = format(t.authorizeFailed, { reason: messages ? messages[0].toUpperCase() + messages.slice(1) : t.failureTitle });
  return { errors, message };
}

/** How an opened request that cannot be paid ends: `[status, detail, answer]`, or null while it can be paid. */
export function closedOutcome(opened, t = defaultStrings) {
  if (opened.status === 'requires_payment') return null;
  const payment = Array.isArray(opened.payments) ? opened.payments.find((p) => p?.state === 'authorized' || p?.state === 'settled') : null;
  const answer = { orderId: opened.id, paymentId: payment?.id };
  if (opened.status === 'paid') return ['success', t.alreadyPaid, answer];
  const said = { expired: t.requestExpired, cancelled: t.requestCancelled, processing: t.requestProcessing }[opened.status];
  return ['failure', said ?? format(t.closed, { status: String(opened.status) }), answer];
}

/** The order a wallet pays, from the opened request. */
export function openedOrder(opened) {
  return {
    orderId: opened.id, priceVersion: opened.priceVersion, paymentRequest: opened.paymentRequest,
    tokenNotificationPath: opened.tokenNotificationPath,
  };
}

/** `POST api/payment-requests/open`: `{opened}`, or `{failure}` (the sentence for the shopper). */
export async function openPaymentRequest(clientSecret, t = defaultStrings) {
  try {
    return { opened: await postJSON('api/payment-requests/open', { clientSecret }) };
  } catch (error) {
    return { failure: format(t.openFailed, { reason: reasonOf(error, t) }) };
  }
}

/**
 * What each wallet's mounted button shares: its state (available, paying, done), the page's
 * callbacks, also dispatched as `orchard:*` DOM events on the container, and the button's
 * enabled and hidden state for the page's current order (`options.order()`, else its own).
 */
export class WalletButton {
  constructor(container, options) {
    this.container = container;
    this.options = options;
    this.t = shopperStrings(options);
    /** Set by mountWallets: every event goes through it instead (it tells the page which wallet). */
    this.relay = null;
    this.order = null;
    this.available = false;
    this.paying = false;
    this.done = false;
    this.button = null;
  }

  emit(name, detail, callback) {
    if (this.relay) {
      this.relay(name, detail);
      return;
    }
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

  /**
   * The shop's payment request, by its client secret (`options.clientSecret`): the opened request
   * when it can be paid, else null, its outcome (already paid, closed, or not found) told.
   */
  async openRequest() {
    const { opened, failure } = await openPaymentRequest(this.options.clientSecret, this.t);
    if (!opened) {
      this.outcome('failure', failure);
      return null;
    }
    this.order = openedOrder(opened);
    this.emit('ready', opened, this.options.onReady);
    const closed = closedOutcome(opened, this.t);
    if (!closed) return opened;
    this.outcome(...closed);
    return null;
  }

  /** What `mount` returns: `available`, `button`, `refresh()` (the page's order changed) and `reset`. */
  controller(reset) {
    const mounted = this;
    return {
      get available() { return mounted.available; },
      get button() { return mounted.button; },
      refresh: () => mounted.refresh(),
      reset,
    };
  }
}

/** Apple Pay JS's ApplePayError where the browser has it, else a plain object of the same shape. */
export function applePayError({ code = 'unknown', contactField, message = '' }) {
  return typeof window.ApplePayError === 'function'
    ? new window.ApplePayError(code, contactField, message)
    : { code, contactField, message };
}
