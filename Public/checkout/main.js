// The checkout page: a basket priced by the server, the Apple Pay button when the device can
// pay, Google Pay's beside it when the shop takes it, and the outcome. Automation hooks:
// [data-testid="apple-pay-button"], [data-testid="google-pay-button"] (or, when Google Pay cannot
// be used, [data-testid="google-pay-unavailable"]) and [data-testid="payment-result"] with
// data-status = success | failure | cancelled | unavailable.

import { defaultStrings, element, getJSON, mount, mountGooglePay, postJSON, reasonOf } from '../orchard.js';
import { format, t } from './strings.js';

const MAX_QUANTITY = 9;
const REPRICE_DELAY_MS = 250;

const part = (name) => document.querySelector(`[data-role="${name}"]`);
/** What the page says when a call failed: a 503 (the shop briefly away) asks to try again. */
const failed = (error) =>
  error?.status === 503 ? t.briefOutage : format(t.loadFailed, { reason: reasonOf(error, { ...defaultStrings, ...t }) });
const result = document.querySelector('[data-testid="payment-result"]');

const state = {
  settings: null,
  quantities: new Map(),
  order: null,
  ordering: null,
  paying: false,
  paid: false,
  /** The wallet whose sheet is open: 'apple', 'google' or null; the other's button waits. */
  wallet: null,
  /** The button's controller from orchard.js. */
  checkout: null,
  /** Google Pay's button controller, when the shop takes Google Pay and the browser can use it. */
  googlePay: null,
};

/** Amounts stay the server's decimal strings; Intl formats the string itself, never a float of it. */
function money(amount) {
  try {
    return new Intl.NumberFormat(t.locale, { style: 'currency', currency: state.settings.currencyCode }).format(amount);
  } catch {
    return `${amount} ${state.settings.currencyCode}`;
  }
}

function applyStrings() {
  document.documentElement.lang = t.locale;
  for (const node of document.querySelectorAll('[data-i18n]')) node.textContent = t[node.dataset.i18n] ?? '';
}

// ---- outcome ----

function showResult(status, title, detail = '') {
  if (status) result.dataset.status = status;
  else delete result.dataset.status;
  part('result-title').textContent = title;
  part('result-detail').textContent = detail;
  part('restart').hidden = status !== 'success';
}

function clearResult() {
  showResult(null, '', '');
}

// ---- basket ----

function renderProducts() {
  const list = part('products');
  list.replaceChildren(
    ...state.settings.products.map((product) => {
      const quantity = state.quantities.get(product.id) ?? 0;
      const minus = element('button', {
        type: 'button', class: 'stepper', 'aria-label': format(t.decrease, { product: product.label }), text: '−',
      });
      const plus = element('button', {
        type: 'button', class: 'stepper', 'aria-label': format(t.increase, { product: product.label }), text: '+',
      });
      minus.disabled = quantity === 0 || state.paying || state.paid;
      plus.disabled = quantity === MAX_QUANTITY || state.paying || state.paid;
      minus.addEventListener('click', () => changeQuantity(product.id, -1));
      plus.addEventListener('click', () => changeQuantity(product.id, +1));
      const count = element('output', {
        class: 'quantity', 'aria-label': format(t.quantity, { product: product.label }), text: String(quantity),
      });
      return element('li', { class: 'product', 'data-product': product.id }, [
        element('span', { class: 'product-label', text: product.label }),
        element('span', { class: 'product-price', text: money(product.price) }),
        element('span', { class: 'product-quantity' }, [minus, count, plus]),
      ]);
    }),
  );
}

function renderTotals(lineItems, total) {
  part('lines').replaceChildren(
    ...lineItems.map((item) =>
      element('tr', {}, [element('th', { scope: 'row', text: item.label }), element('td', { text: money(item.amount) })])),
  );
  const cell = part('total');
  cell.textContent = total ? money(total.amount) : '—';
  if (total) cell.dataset.amount = total.amount;
  else delete cell.dataset.amount;
}

function updateButton() {
  state.checkout?.refresh();
  state.googlePay?.refresh();
}

function changeQuantity(productId, delta) {
  const next = Math.min(MAX_QUANTITY, Math.max(0, (state.quantities.get(productId) ?? 0) + delta));
  state.quantities.set(productId, next);
  renderProducts();
  scheduleOrder();
}

let orderTimer = null;
function scheduleOrder() {
  state.order = null;
  updateButton();
  clearTimeout(orderTimer);
  orderTimer = setTimeout(() => createOrder(), REPRICE_DELAY_MS);
}

/** A fresh order for the basket; the newest call wins if the shopper keeps clicking. */
async function createOrder() {
  const items = [...state.quantities].filter(([, quantity]) => quantity > 0).map(([productId, quantity]) => ({ productId, quantity }));
  state.order = null;
  if (items.length === 0) {
    renderTotals([], null);
    part('lines').replaceChildren(element('tr', {}, [element('td', { colspan: '2', text: t.emptyBasket })]));
    updateButton();
    return;
  }
  const attempt = postJSON('/api/orders', { items });
  state.ordering = attempt;
  updateButton();
  try {
    const order = await attempt;
    if (state.ordering !== attempt) return;
    state.order = order;
    renderTotals(order.paymentRequest.lineItems, order.paymentRequest.total);
  } catch (error) {
    if (state.ordering !== attempt) return;
    showResult('failure', t.failureTitle, failed(error));
  } finally {
    if (state.ordering === attempt) state.ordering = null;
    updateButton();
  }
}

// ---- the button: Orchard's module, the same one shops embed ----

function finishPayment({ status, detail, orderId, reason }) {
  state.paying = false;
  state.wallet = null;
  state.googlePay?.refresh();
  if (status === 'success') {
    state.paid = true;
    // Paid: neither wallet's button stays for this order (each hides its own; the other's goes too).
    part('pay-slot').hidden = true;
    part('google-pay-slot').hidden = true;
    const total = part('total').dataset.amount;
    showResult('success', t.successTitle, format(t.successDetail, { order: orderId, amount: money(total) }));
  } else if (status === 'cancelled') {
    showResult('cancelled', t.cancelledTitle, detail);
  } else if (status === 'unavailable') {
    // Apple's SDK failing is worth saying: the shopper may have blocked it, or be offline.
    showResult('unavailable', t.unavailableTitle, reason ? `${detail} ${t.unavailableDetail}` : t.unavailableDetail);
    return;
  } else {
    showResult('failure', t.failureTitle, detail);
  }
  renderProducts();
  result.focus();
}

/** Google Pay's outcome: as Apple Pay's, except that Google Pay being unavailable is said beside its slot only. */
function finishGooglePay(outcome) {
  if (outcome.status === 'unavailable') {
    const slot = part('google-pay-slot');
    slot.dataset.status = 'unavailable';
    slot.replaceChildren(element('p', { class: 'pay-note', 'data-testid': 'google-pay-unavailable', text: outcome.detail }));
    return;
  }
  finishPayment(outcome);
  updateButton();
}

function restart() {
  state.paid = false;
  state.quantities = new Map(state.settings.products.slice(0, 1).map((product) => [product.id, 1]));
  clearResult();
  renderProducts();
  createOrder();
  part('pay-slot').hidden = false;
  part('google-pay-slot').hidden = false;
  state.googlePay?.reset();
  state.checkout.reset();
  state.checkout.button?.focus();
}

async function main() {
  applyStrings();
  part('restart').addEventListener('click', restart);
  part('lines').replaceChildren(element('tr', {}, [element('td', { colspan: '2', text: t.loading })]));
  try {
    state.settings = await getJSON('/api/checkout');
  } catch (error) {
    showResult('failure', t.failureTitle, failed(error));
    return;
  }
  const { settings } = state;
  part('shop-name').textContent = settings.displayName;
  document.title = `${t.title} · ${settings.displayName}`;
  state.quantities = new Map(settings.products.slice(0, 1).map((product) => [product.id, 1]));
  renderProducts();
  const ordered = createOrder();
  // Google's script loads beside Apple's SDK, each with its own deadline.
  const googlePay = settings.googlePay ? startGooglePay(settings.googlePay) : null;
  state.checkout = await mount(part('pay-slot'), {
    ...walletOptions('apple'),
    merchantIdentifier: settings.merchantIdentifier,
    simulatedSheet: settings.simulatedSheet,
    applePaySDK: settings.applePaySDK,
    applePaySDKIntegrity: settings.applePaySDKIntegrity,
    applePaySDKTimeoutMs: settings.applePaySDKTimeoutMs,
    mode: settings.applePayMode,
    buttonClass: 'apple-pay-button',
    onOutcome: finishPayment,
  });
  await Promise.all([ordered, googlePay]);
}

/**
 * What both wallets' buttons are given: the page's order (none while the other wallet's sheet is
 * open, or once paid), its strings, and the page's part of a payment.
 */
function walletOptions(wallet) {
  return {
    order: () => ((state.wallet !== null && state.wallet !== wallet) || state.paid ? null : state.order),
    strings: t,
    onStart: () => {
      clearResult();
      state.paying = true;
      state.wallet = wallet;
      updateButton();
      renderProducts();
    },
    onTotals: (update) => renderTotals(update.newLineItems, update.newTotal),
    onAttemptFailed: ({ message }) => showResult('failure', t.failureTitle, message),
  };
}

/** Google Pay's button beside Apple Pay's, on the same order: its sheet reprices through the same server calls. */
async function startGooglePay(googlePay) {
  document.querySelector('[data-i18n="shippingNote"]').textContent = t.shippingNoteWithGooglePay;
  state.googlePay = await mountGooglePay(part('google-pay-slot'), {
    ...walletOptions('google'),
    settings: googlePay,
    buttonClass: 'google-pay-button',
    onOutcome: finishGooglePay,
  });
}

main();
