// Apple Pay JS: availability, and one payment session from the button tap to the outcome.
// Uses only what Apple documents for ApplePaySession; every number comes from the server.

import { ApiError, postJSON } from './api.js';

/** Versions this page can use: 3 added STATUS_FAILURE with ApplePayError; 12 added coupons. */
const MIN_VERSION = 3;
const MAX_VERSION = 14;
const COUPON_VERSION = 12;
const CAPABILITIES_TIMEOUT_MS = 3_000;

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
    if (typeof session.applePayCapabilities === 'function') {
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

/** The payment request for `version`: fields a version lacks are left out, as Safari would reject them. */
export function paymentRequestFor(serverRequest, version) {
  const request = structuredClone(serverRequest);
  if (version < COUPON_VERSION) {
    delete request.supportsCouponCode;
    delete request.couponCode;
  }
  if (request.couponCode == null) delete request.couponCode;
  return request;
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
 * Opens the sheet for `order` and runs it to an outcome. Must be called synchronously from the
 * button's click handler: Safari only creates sessions inside a user gesture.
 *
 * `on.totals(update)` runs when the server reprices, `on.attemptFailed(message)` when an
 * authorization is refused (the sheet stays open for another try), and `on.outcome(status,
 * detail, answer)` once, with status success | failure | cancelled.
 */
export function startPayment({ order, version, on, t, format }) {
  const ApplePaySession = window.ApplePaySession;
  const request = paymentRequestFor(order.paymentRequest, version);
  const session = new ApplePaySession(version, request);
  const base = `/api/orders/${encodeURIComponent(order.orderId)}`;
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
      const merchantSession = await postJSON('/api/apple-pay/session', { validationURL: event.validationURL });
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
    repriced('shipping-contact', { countryCode: event.shippingContact?.countryCode ?? null }, (u) =>
      session.completeShippingContactSelection(u))();

  session.onshippingmethodselected = (event) =>
    repriced('shipping-method', { identifier: event.shippingMethod?.identifier ?? '' }, (u) =>
      session.completeShippingMethodSelection(u))();

  session.oncouponcodechanged = (event) =>
    repriced('coupon', { couponCode: event.couponCode ?? '' }, (u) => session.completeCouponCodeChange(u))();

  session.onpaymentauthorized = async (event) => {
    let answer;
    try {
      answer = await postJSON('/api/apple-pay/authorize', { orderId: order.orderId, payment: event.payment });
    } catch (error) {
      const body = error instanceof ApiError ? error.body : null;
      answer = body?.status
        ? body
        : {
          status: 'failure',
          errors: [{ code: 'unknown', message: error?.timedOut ? t.authorizeTimedOut : reason(error) }],
        };
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
