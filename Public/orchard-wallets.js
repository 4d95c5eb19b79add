// Both wallets for one payment request from one call (`mountWallets` in orchard.js): the request
// opened once, Apple Pay's button and, where the opened request carries Google Pay's settings,
// Google's below it (or in the page's own place for it). One sheet at a time, one outcome, and one
// set of callbacks whose details say which wallet (`applePay` or `googlePay`) each is about.

import { closedOutcome, openPaymentRequest, openedOrder } from './orchard-api.js';
import { hasAgreement } from './orchard-session.js';
import { shopperStrings } from './orchard-strings.js';

/** The page's callback for each `orchard:*` event. */
const CALLBACKS = {
  ready: 'onReady', start: 'onStart', totals: 'onTotals', attemptfailed: 'onAttemptFailed', outcome: 'onOutcome',
  unavailable: 'onUnavailable',
};

/** A slot for one wallet's button, in the container the page gave. */
function slot(className) {
  const node = document.createElement('div');
  node.className = className;
  return node;
}

/**
 * The buttons of one payment request and what they share: the order, the wallet whose sheet is
 * open (the other's button waits), whether it is paid (then neither stays), and which wallets
 * said they cannot pay here. `makers` builds each wallet's button (orchard.js passes Apple Pay's;
 * taking them as arguments keeps this module free of an import cycle).
 */
export class Wallets {
  constructor(container, options, makers) {
    this.container = container;
    this.options = options;
    this.makers = makers;
    this.t = shopperStrings(options);
    this.order = null;
    this.open = null;
    this.paid = false;
    this.buttons = {};
    this.unavailable = {};
  }

  emit(name, detail) {
    const callback = this.options[CALLBACKS[name]];
    if (typeof callback === 'function') callback(detail);
    this.container.dispatchEvent(new CustomEvent(`orchard:${name}`, { detail, bubbles: true }));
  }

  /** The order `wallet` may pay now: none while the other wallet's sheet is open, or once paid. */
  orderFor(wallet) {
    return this.paid || (this.open !== null && this.open !== wallet) ? null : this.order;
  }

  refresh() {
    for (const button of Object.values(this.buttons)) {
      if (this.paid) button.done = true;
      button.refresh();
    }
  }

  /** What a wallet's button reports, told to the page with the wallet's name. */
  relayed(wallet, name, detail) {
    if (name === 'outcome') {
      this.walletOutcome(wallet, detail);
      return;
    }
    if (name === 'start') {
      this.open = wallet;
      this.refresh();
    }
    this.emit(name, { ...detail, wallet });
  }

  walletOutcome(wallet, outcome) {
    if (this.open === wallet) this.open = null;
    if (outcome.status === 'unavailable') {
      this.unavailable[wallet] = outcome;
      this.emit('unavailable', { wallet, detail: outcome.detail, reason: outcome.reason ?? null });
      if (Object.keys(this.buttons).every((name) => this.unavailable[name])) this.noWallet();
      return;
    }
    if (outcome.status === 'success') this.paid = true;
    this.refresh();
    this.emit('outcome', { ...outcome, wallet });
  }

  /** Every wallet offered said it cannot pay here: one `unavailable` outcome. */
  noWallet() {
    const said = Object.entries(this.unavailable);
    const detail = said.length === 1 ? said[0][1].detail : this.t.noWallet;
    const reasons = Object.fromEntries(said.map(([wallet, outcome]) => [wallet, outcome.reason ?? null]));
    const reason = said.map(([, outcome]) => outcome.reason).filter(Boolean).join('; ') || null;
    this.emit('outcome', { status: 'unavailable', wallet: null, detail, orderId: null, paymentId: null, reason, reasons });
  }

  /** The opened request, once: then each wallet's button, started side by side. */
  async start() {
    const { opened, failure } = await openPaymentRequest(this.options.clientSecret, this.t);
    if (!opened) {
      this.emit('outcome', { status: 'failure', wallet: null, detail: failure, orderId: null, paymentId: null, reason: null });
      return;
    }
    this.order = openedOrder(opened);
    this.emit('ready', opened);
    const closed = closedOutcome(opened, this.t);
    if (closed) {
      const [status, detail, answer] = closed;
      this.paid = status === 'success';
      this.emit('outcome', { status, wallet: null, detail, orderId: answer.orderId ?? null, paymentId: answer.paymentId ?? null, reason: null });
      return;
    }
    this.add('applePay', this.container.appendChild(slot('orchard-apple-pay')), {
      merchantIdentifier: opened.merchantIdentifier,
      simulatedSheet: this.options.simulatedSheet ?? opened.simulatedSheet,
    });
    // Google Pay cannot set up an agreement (the server refuses it): such a request is Apple Pay's alone.
    if (opened.googlePay && this.options.googlePay !== false && !hasAgreement(opened.paymentRequest)) {
      const placed = this.options.googlePayContainer;
      const place = placed instanceof Element ? placed : this.container.appendChild(slot('orchard-google-pay'));
      this.add('googlePay', place, { settings: opened.googlePay, buttonClass: this.options.googlePayButtonClass });
    }
    await Promise.allSettled(Object.values(this.buttons).map((button) => button.start()));
  }

  /** One wallet's button in `place`. */
  add(wallet, place, extra) {
    const options = {
      ...this.options, ...extra, clientSecret: undefined, strings: this.t, order: () => this.orderFor(wallet),
    };
    const button = this.makers[wallet](place, options);
    button.order = this.order;
    button.relay = (name, detail) => this.relayed(wallet, name, detail);
    this.buttons[wallet] = button;
  }

  /** What `mountWallets` returns. */
  controller() {
    const wallets = this;
    return {
      get available() { return Object.values(wallets.buttons).some((button) => button.available); },
      /** The wallets whose button is shown, Apple Pay's first. */
      get wallets() { return Object.keys(wallets.buttons).filter((name) => wallets.buttons[name].available); },
      refresh: () => wallets.refresh(),
    };
  }
}
