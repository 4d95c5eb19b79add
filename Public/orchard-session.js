// Apple Pay JS's ApplePaySession: Safari's own, or the one Apple's SDK defines in Chrome, Edge and
// Firefox. Only what Apple documents for ApplePaySession is used; every number comes from the server.

import { applePayError, defaultStrings, format, orderCalls, reasonOf, refusal } from './orchard-api.js';

const BASE = new URL('./', import.meta.url);

/**
 * Versions this module can use: 3 added STATUS_FAILURE with ApplePayError; 12 added coupons;
 * 14 added recurring, deferred and automatic-reload payment requests.
 */
export const MIN_VERSION = 3;
export const MAX_VERSION = 14;
export const COUPON_VERSION = 12;
export const AGREEMENT_VERSION = 14;

/**
 * The request fields that carry an agreement, each with the update member that sends it again,
 * and the date members Apple Pay JS wants as Date objects.
 */
const RENEWALS = {
  recurringPaymentRequest: 'newRecurringPaymentRequest',
  deferredPaymentRequest: 'newDeferredPaymentRequest',
  automaticReloadPaymentRequest: 'newAutomaticReloadPaymentRequest',
};
const AGREEMENTS = Object.keys(RENEWALS);
const LINE_DATES = ['recurringPaymentStartDate', 'recurringPaymentEndDate', 'deferredPaymentDate'];

/** Whether the request sets up a recurring, deferred or automatic-reload agreement. */
export function hasAgreement(serverRequest) {
  return AGREEMENTS.some((key) => serverRequest?.[key] != null);
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

/**
 * The agreement of a request from `paymentRequestFor`, as a copy under its own field
 * (`{deferredPaymentRequest: …}`), or `{}` for a payment without one.
 */
export function agreementOf(request) {
  const key = AGREEMENTS.find((field) => request[field] != null);
  return key ? { [key]: structuredClone(request[key]) } : {};
}

/** The same agreement under the member an update sends it again with (`{newDeferredPaymentRequest: …}`), or `{}`. */
function renewedAgreement(request) {
  return Object.fromEntries(Object.entries(agreementOf(request)).map(([key, agreement]) => [RENEWALS[key], agreement]));
}

/** What Apple Pay reveals of the address before payment: enough for a shop to price delivery. */
export function redactedAddress(contact) {
  return {
    countryCode: contact?.countryCode ?? null,
    postalCode: contact?.postalCode ?? null,
    locality: contact?.locality ?? null,
    administrativeArea: contact?.administrativeArea ?? null,
  };
}

function sheetUpdate(update, request) {
  const result = {
    newTotal: update.newTotal, newLineItems: update.newLineItems, errors: (update.errors ?? []).map(applePayError),
    ...renewedAgreement(request),
  };
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
  const request = paymentRequestFor(order.paymentRequest, version, order.tokenNotificationPath);
  const session = new ApplePaySession(version, request);
  const calls = orderCalls(order, t);
  let finished = false;
  let lastFailure = null;

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
      const merchantSession = await calls.merchantSession(event.validationURL);
      if (!finished) session.completeMerchantValidation(merchantSession);
    } catch (error) {
      abort(format(t.validationFailed, { reason: reasonOf(error, t) }));
    }
  };

  // Every update also sends the request's agreement again, as it was sent (Date objects and all):
  // Safari drops a deferred payment request from the sheet when the shopper changes card and the
  // update leaves it out (WebKit/WebKit#70430); the shopper then pays with a device token, the
  // terms no longer shown. Apple Pay JS's four update objects have new…PaymentRequest for this.
  const repriced = async (call, complete) => {
    try {
      const update = await call();
      if (finished) return;
      on.totals(update);
      complete(sheetUpdate(update, request));
    } catch (error) {
      abort(format(t.updateFailed, { reason: reasonOf(error, t) }));
    }
  };

  session.onpaymentmethodselected = (event) =>
    repriced(() => calls.paymentMethod(event.paymentMethod?.type), (u) =>
      session.completePaymentMethodSelection({ newTotal: u.newTotal, newLineItems: u.newLineItems, ...renewedAgreement(request) }));

  session.onshippingcontactselected = (event) =>
    repriced(() => calls.shippingContact(redactedAddress(event.shippingContact)), (u) => session.completeShippingContactSelection(u));

  session.onshippingmethodselected = (event) =>
    repriced(() => calls.shippingMethod(event.shippingMethod?.identifier), (u) => session.completeShippingMethodSelection(u));

  session.oncouponcodechanged = (event) =>
    repriced(() => calls.coupon(event.couponCode), (u) => session.completeCouponCodeChange(u));

  session.onpaymentauthorized = async (event) => {
    const answer = await calls.authorize(event.payment);
    if (answer.status === 'success') {
      // With the merchant's Wallet orders on, Wallet fetches the order the answer names.
      const result = { status: ApplePaySession.STATUS_SUCCESS ?? 0, errors: [] };
      if (answer.orderDetails) result.orderDetails = answer.orderDetails;
      session.completePayment(result);
      finish('success', null, answer);
      return;
    }
    const { errors, message } = refusal(answer, t);
    session.completePayment({ status: ApplePaySession.STATUS_FAILURE ?? 1, errors: errors.map(applePayError) });
    // The sheet stays open for another try; the page shows why this one failed.
    lastFailure = message;
    on.attemptFailed(lastFailure);
  };

  session.oncancel = () => {
    if (lastFailure) finish('failure', lastFailure);
    else finish('cancelled', t.cancelledDetail);
  };

  session.begin();
  return session;
}
