// Every string of this page, in one place. To localise, copy `en`, translate the values, and
// pick the table in `strings` below (the keys are the contract). The payment session's own
// messages are `defaultStrings` in ../orchard.js; a key of the same name here overrides one.

const en = {
  locale: 'en',
  title: 'Checkout',
  productsTitle: 'Your basket',
  summaryTitle: 'Order summary',
  summaryCaption: 'Items, delivery and total, as priced by the shop',
  total: 'Total',
  shippingNote: 'Delivery and any coupon are chosen on the Apple Pay sheet; the total updates here.',
  shippingNoteWithGooglePay: 'Delivery is chosen on the Apple Pay or Google Pay sheet, a coupon on Apple Pay\'s; the total updates here.',
  payTitle: 'Payment',
  decrease: 'Remove one {product}',
  increase: 'Add one {product}',
  quantity: 'Quantity of {product}',
  emptyBasket: 'Your basket is empty. Add something to pay.',
  loading: 'Loading your basket…',
  loadFailed: 'The shop could not be reached: {reason}. Reload the page to try again.',
  briefOutage: 'The shop is briefly unavailable; nothing was charged. Please try again in a moment.',
  payButton: 'Buy with Apple Pay',
  unavailableTitle: 'Apple Pay is not available on this device',
  unavailableDetail: 'Use Safari on an iPhone, iPad or Mac with a card in Wallet, or choose another way to pay.',
  successTitle: 'Thank you, your payment is complete',
  successDetail: 'Order {order}: {amount} paid.',
  failureTitle: 'Payment not completed',
  cancelledTitle: 'Payment cancelled',
  cancelledDetail: 'Nothing was charged. Your basket is still here when you are ready.',
  restart: 'Start a new order',
};

const strings = { en };

export const t = strings[document.documentElement.lang] ?? en;

/** `format('Add one {product}', {product: 'cider'})` → 'Add one cider'. */
export function format(template, values = {}) {
  return template.replace(/\{(\w+)\}/g, (match, key) => (key in values ? String(values[key]) : match));
}
