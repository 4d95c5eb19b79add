// The W3C Payment Request API with Apple Pay's payment method (`https://apple.com/apple-pay`):
// Safari's own, or Apple's SDK's in Chrome and Edge, which maps a request whose only method is
// Apple Pay onto its session. The same server calls as the ApplePaySession path, the same
// outcomes; only the browser API differs.

import { applePayError, defaultStrings, format, orderCalls, reasonOf, refusal } from './orchard-api.js';
import { COUPON_VERSION, agreementOf, hasAgreement, paymentRequestFor } from './orchard-session.js';

export const APPLE_PAY_METHOD = 'https://apple.com/apple-pay';

/** The server request's fields that Apple Pay's method data takes as they are. */
const METHOD_FIELDS = [
  'countryCode', 'merchantCapabilities', 'supportedNetworks', 'requiredBillingContactFields', 'requiredShippingContactFields',
  'supportedCountries', 'applicationData', 'shippingContactEditingMode',
];
const PAYER_OPTIONS = { name: 'requestPayerName', email: 'requestPayerEmail', phone: 'requestPayerPhone' };

/** Whether payments can go through the Payment Request API here: the browser has one. */
export function canUsePaymentRequest() {
  return typeof window.PaymentRequest === 'function';
}

/**
 * `details.modifiers` for the request's recurring, deferred or automatic-reload agreement: one
 * Apple Pay modifier (Apple's ApplePayModifier) without `paymentMethodType`, so it applies to
 * whatever card the shopper picks; none for a payment without an agreement. It is the only
 * place the Payment Request API takes an agreement: the method data (WebKit's ApplePayRequest)
 * has no such member, and Safari ignores one put there. The agreement is the one ApplePaySession
 * gets, dates as Date objects; the API turns them into ISO strings, which WebKit parses back
 * into Apple Pay's Date members (JSDOMConvertDate's valueToDate).
 */
export function agreementModifiers(serverRequest, { version, tokenNotificationPath = null }) {
  if (!hasAgreement(serverRequest)) return [];
  const data = agreementOf(paymentRequestFor(serverRequest, version, tokenNotificationPath));
  return [{ supportedMethods: APPLE_PAY_METHOD, data }];
}

/** A PaymentItem from an Apple Pay line item. */
function paymentItem(currency, item) {
  const result = { label: item.label, amount: { currency, value: item.amount } };
  if (item.type === 'pending') result.pending = true;
  return result;
}

/** Shipping options from Apple Pay shipping methods; `selected` (by default the first, as Apple Pay preselects it). */
function shippingOptions(currency, methods, selected = methods[0]?.identifier) {
  return methods.map((method) => ({
    id: method.identifier, label: method.label, amount: { currency, value: method.amount }, selected: method.identifier === selected,
  }));
}

/**
 * `[methodData, details, options]` for `new PaymentRequest(…)`, from the server's Apple Pay
 * payment request: the Apple Pay method's data carries what only Apple Pay knows (merchant,
 * networks, capabilities, applicationData, the contact fields), the details the amounts and, in
 * a modifier, the agreement.
 */
export function paymentRequestArguments(serverRequest, { version, merchantIdentifier, tokenNotificationPath = null }) {
  const currency = serverRequest.currencyCode;
  const data = { version, merchantIdentifier };
  for (const field of METHOD_FIELDS) if (serverRequest[field] != null) data[field] = structuredClone(serverRequest[field]);
  if (version >= COUPON_VERSION) {
    if (serverRequest.supportsCouponCode != null) data.supportsCouponCode = serverRequest.supportsCouponCode;
    if (serverRequest.couponCode != null) data.couponCode = serverRequest.couponCode;
  }
  const fields = serverRequest.requiredShippingContactFields ?? [];
  const options = { requestShipping: fields.includes('postalAddress') };
  for (const [field, option] of Object.entries(PAYER_OPTIONS)) if (fields.includes(field)) options[option] = true;
  const details = {
    total: paymentItem(currency, serverRequest.total),
    displayItems: (serverRequest.lineItems ?? []).map((item) => paymentItem(currency, item)),
  };
  if (options.requestShipping) details.shippingOptions = shippingOptions(currency, serverRequest.shippingMethods ?? []);
  const modifiers = agreementModifiers(serverRequest, { version, tokenNotificationPath });
  if (modifiers.length) details.modifiers = modifiers;
  return [[{ supportedMethods: APPLE_PAY_METHOD, data }], details, options];
}

/** The address Apple Pay reveals before payment, from the API's PaymentAddress, as the server prices it. */
function redactedAddress(address) {
  return {
    countryCode: address?.country || null,
    postalCode: address?.postalCode || null,
    locality: address?.city || null,
    administrativeArea: address?.region || null,
  };
}

/**
 * Opens the sheet for `order` through `new PaymentRequest(…).show()` and runs it to an outcome,
 * with the callbacks of `startPayment`. Must be called synchronously from the button's click
 * handler: `show()` needs the click. A refused authorization is shown on the sheet through
 * `retry()` where the browser has it, so the shopper may try again; otherwise it ends the payment.
 */
export function startPaymentRequest({ order, version, merchantIdentifier, on, t = defaultStrings }) {
  const serverRequest = order.paymentRequest;
  const currency = serverRequest.currencyCode;
  const { tokenNotificationPath } = order;
  const request = new window.PaymentRequest(
    ...paymentRequestArguments(serverRequest, { version, merchantIdentifier, tokenNotificationPath }));
  const modifiers = agreementModifiers(serverRequest, { version, tokenNotificationPath });
  const calls = orderCalls(order, t);
  let finished = false;
  let failure = null;
  let lastFailure = null;
  let methods = serverRequest.shippingMethods ?? [];

  const finish = (status, detail, answer) => {
    if (finished) return;
    finished = true;
    on.outcome(status, detail, answer);
  };
  // Something the shopper cannot fix on the sheet: the browser closes it, and show() says why.
  const failed = (message, error) => {
    failure ??= message;
    throw error;
  };

  request.onmerchantvalidation = (event) => {
    event.complete(calls.merchantSession(event.validationURL).catch((error) =>
      failed(format(t.validationFailed, { reason: reasonOf(error, t) }), error)));
  };

  const repriced = (event, call) => {
    event.updateWith(call().then((update) => {
      on.totals(update);
      // A new list comes with the shop's choice first; otherwise the shopper's choice stands.
      const selected = update.newShippingMethods ? update.newShippingMethods[0]?.identifier : request.shippingOption;
      if (update.newShippingMethods) methods = update.newShippingMethods;
      const details = {
        total: paymentItem(currency, update.newTotal),
        displayItems: update.newLineItems.map((item) => paymentItem(currency, item)),
      };
      if (request.shippingType) details.shippingOptions = shippingOptions(currency, methods, selected ?? methods[0]?.identifier);
      // The agreement again, in the update's Apple Pay modifier as Apple documents it. WebKit
      // keeps the earlier modifiers for an update without any (as the W3C API says) and sends
      // the sheet their agreement again; sending it anyway relies on no browser, nor Apple's
      // SDK, keeping them, as a sheet that loses it pays with a device token under no terms
      // (WebKit/WebKit#70430, see orchard-session.js).
      if (modifiers.length) details.modifiers = modifiers;
      // Safari shows Apple Pay's own errors only from here, as ApplePayError objects.
      if (update.errors?.length) details.paymentMethodErrors = update.errors.map(applePayError);
      return details;
    }, (error) => failed(format(t.updateFailed, { reason: reasonOf(error, t) }), error)));
  };

  request.onpaymentmethodchange = (event) => {
    const details = event.methodDetails ?? {};
    repriced(event, () => ('couponCode' in details ? calls.coupon(details.couponCode) : calls.paymentMethod(details.type)));
  };
  request.onshippingaddresschange = (event) =>
    repriced(event, () => calls.shippingContact(redactedAddress(request.shippingAddress)));
  request.onshippingoptionchange = (event) =>
    repriced(event, () => calls.shippingMethod(request.shippingOption));

  const authorize = async (response) => {
    const { token, billingContact, shippingContact } = response.details ?? {};
    const answer = await calls.authorize({ token, billingContact, shippingContact });
    if (answer.status === 'success') {
      // WebKit takes the Wallet order as ApplePayPaymentCompleteDetails; other browsers ignore it.
      const details = answer.orderDetails ? { orderDetails: answer.orderDetails } : undefined;
      await response.complete('success', details).catch(() => {});
      finish('success', null, answer);
      return;
    }
    const { errors, message } = refusal(answer, t);
    lastFailure = message;
    on.attemptFailed(message);
    if (typeof response.retry !== 'function') {
      await response.complete('fail').catch(() => {});
      finish('failure', message);
      return;
    }
    try {
      // The sheet stays open with the errors; this resolves once the shopper pays again.
      await response.retry({ paymentMethod: errors.map(applePayError) });
    } catch {
      finish('failure', lastFailure);
      return;
    }
    await authorize(response);
  };

  request.show().then(authorize, (error) => {
    if (failure) finish('failure', failure);
    else if (error?.name === 'AbortError') finish(lastFailure ? 'failure' : 'cancelled', lastFailure ?? t.cancelledDetail);
    else finish('failure', format(t.sessionFailed, { reason: error?.message ?? String(error) }));
  });
  return request;
}
