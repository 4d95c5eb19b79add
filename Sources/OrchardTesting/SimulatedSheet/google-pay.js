// Orchard demo: a STAND-IN for Google Pay's pay.js, for `orchard-sandbox demo --google-pay` and tests
// only. It is our own code, written from Google's published API reference (Google's pay.js cannot run
// offline and is not copied). Like Google's, it is a classic script that defines
// google.payments.api.PaymentsClient: isReadyToPay, createButton, prefetchPaymentData and
// loadPaymentData, whose sheet is a small, clearly labelled panel of this page. It calls the
// request's paymentDataCallbacks as Google's sheet does (onPaymentDataChanged with INITIALIZE,
// SHIPPING_ADDRESS and SHIPPING_OPTION, onPaymentAuthorized on Pay) and applies what they answer.
// The "card" is a network's published test number and the token is minted by the demo server
// (POST /demo/google-pay-token), signed by the demo's test root, never Google's: only a demo trusts it.
(() => {
  'use strict';

  const script = document.currentScript;
  const BASE = new URL('./', script?.src ?? location.href);
  const MINT_URL = new URL('google-pay-token', BASE);

  const ENVIRONMENTS = ['TEST', 'PRODUCTION'];
  const BUTTON_COLORS = ['default', 'black', 'white'];
  const BUTTON_TYPES = ['book', 'buy', 'checkout', 'donate', 'order', 'pay', 'plain', 'subscribe', 'long', 'short'];
  const BUTTON_WORDS = {
    book: 'Book with', buy: 'Buy with', checkout: 'Checkout with', donate: 'Donate with', order: 'Order with', pay: 'Pay with',
    plain: '', subscribe: 'Subscribe with', long: 'Buy with', short: '',
  };
  const CALLBACK_INTENTS = ['OFFER', 'PAYMENT_AUTHORIZATION', 'PAYMENT_METHOD', 'SHIPPING_ADDRESS', 'SHIPPING_OPTION'];
  const TOTAL_PRICE_STATUSES = ['NOT_CURRENTLY_KNOWN', 'ESTIMATED', 'FINAL'];
  const AUTH_METHODS = ['PAN_ONLY', 'CRYPTOGRAM_3DS'];
  // Networks the demo server has a test card for (SimulatedGooglePayCard.testCards).
  const TEST_CARDS = { VISA: '1111', MASTERCARD: '4444', AMEX: '0005', DISCOVER: '1117', JCB: '0000' };
  // Addresses the sheet offers: what Google reveals before payment is the redacted part.
  const ADDRESSES = [
    { name: 'Camille Martin', address1: '12 rue des Pommiers', locality: 'Paris', administrativeArea: '', postalCode: '75011',
      countryCode: 'FR' },
    { name: 'Jonas Becker', address1: 'Apfelweg 3', locality: 'Berlin', administrativeArea: 'BE', postalCode: '10115', countryCode: 'DE' },
    { name: 'Alex Doe', address1: '1 Orchard Street', locality: 'New York', administrativeArea: 'NY', postalCode: '10002',
      countryCode: 'US' },
  ];
  const SHIPPING_ERRORS = ['SHIPPING_ADDRESS_INVALID', 'SHIPPING_ADDRESS_UNSERVICEABLE', 'SHIPPING_OPTION_INVALID'];

  /** Google rejects with {statusCode, statusMessage}. */
  const failure = (statusCode, statusMessage) => ({ statusCode, statusMessage });
  const developerError = (statusMessage) => failure('DEVELOPER_ERROR', statusMessage);

  function element(tag, attributes = {}, children = []) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes)) {
      if (key === 'text') node.textContent = value;
      else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? '' : value);
    }
    node.append(...children);
    return node;
  }

  function money(price, currencyCode) {
    try {
      return new Intl.NumberFormat('en', { style: 'currency', currency: currencyCode }).format(price);
    } catch {
      return `${price} ${currencyCode}`;
    }
  }

  /** The CARD methods of a request, or the reason it is malformed. */
  function cardMethods(request) {
    if (request?.apiVersion !== 2 || typeof request.apiVersionMinor !== 'number') return { error: 'apiVersion must be 2 with an apiVersionMinor' };
    const methods = request.allowedPaymentMethods;
    if (!Array.isArray(methods) || methods.length === 0) return { error: 'allowedPaymentMethods must list at least one method' };
    const cards = methods.filter((method) => method?.type === 'CARD');
    for (const card of cards) {
      const { allowedAuthMethods, allowedCardNetworks } = card.parameters ?? {};
      if (!Array.isArray(allowedAuthMethods) || !allowedAuthMethods.length || !allowedAuthMethods.every((m) => AUTH_METHODS.includes(m))) {
        return { error: 'CARD parameters.allowedAuthMethods must list PAN_ONLY and/or CRYPTOGRAM_3DS' };
      }
      if (!Array.isArray(allowedCardNetworks) || !allowedCardNetworks.length) {
        return { error: 'CARD parameters.allowedCardNetworks must list at least one network' };
      }
    }
    return { cards };
  }

  /** What loadPaymentData checks before it opens anything. */
  function requestProblem(request, callbacks) {
    const checked = cardMethods(request);
    if (checked.error) return checked.error;
    if (!checked.cards.length) return 'this stand-in offers CARD payment methods only';
    for (const card of checked.cards) {
      const type = card.tokenizationSpecification?.type;
      if (!['PAYMENT_GATEWAY', 'DIRECT'].includes(type)) return 'CARD needs a tokenizationSpecification of type PAYMENT_GATEWAY or DIRECT';
    }
    const info = request.transactionInfo;
    if (!info || typeof info.currencyCode !== 'string' || !TOTAL_PRICE_STATUSES.includes(info.totalPriceStatus)) {
      return 'transactionInfo needs currencyCode and totalPriceStatus';
    }
    if (info.totalPriceStatus !== 'NOT_CURRENTLY_KNOWN' && !/^\d+(\.\d{1,2})?$/.test(String(info.totalPrice ?? ''))) {
      return 'transactionInfo.totalPrice must be a decimal string';
    }
    const intents = request.callbackIntents ?? [];
    if (!Array.isArray(intents) || !intents.every((intent) => CALLBACK_INTENTS.includes(intent))) return 'unknown callbackIntents';
    if (intents.includes('PAYMENT_AUTHORIZATION') && typeof callbacks.onPaymentAuthorized !== 'function') {
      return 'callbackIntents PAYMENT_AUTHORIZATION needs paymentDataCallbacks.onPaymentAuthorized';
    }
    if (intents.some((i) => i !== 'PAYMENT_AUTHORIZATION') && typeof callbacks.onPaymentDataChanged !== 'function') {
      return 'callbackIntents other than PAYMENT_AUTHORIZATION need paymentDataCallbacks.onPaymentDataChanged';
    }
    if (intents.includes('SHIPPING_OPTION') && request.shippingOptionRequired !== true) {
      return 'callbackIntents SHIPPING_OPTION needs shippingOptionRequired';
    }
    if (request.shippingOptionRequired && !intents.includes('SHIPPING_OPTION')) {
      return 'shippingOptionRequired needs callbackIntents SHIPPING_OPTION';
    }
    return null;
  }

  /** Every PaymentData the stand-in gave, for tests: google.payments.api.standIn.paid. */
  const standIn = { paid: [], sheet: null };

  /** The open sheet of one loadPaymentData call. */
  class Sheet {
    constructor(client, request, resolve, reject) {
      this.client = client;
      this.request = request;
      this.resolve = resolve;
      this.reject = reject;
      this.callbacks = client.callbacks;
      this.intents = request.callbackIntents ?? [];
      this.transactionInfo = request.transactionInfo;
      this.shippingOptionParameters = request.shippingOptionParameters ?? null;
      this.optionId = this.shippingOptionParameters?.defaultSelectedOptionId ?? this.shippingOptionParameters?.shippingOptions?.[0]?.id
        ?? (request.shippingOptionRequired ? 'shipping_option_unselected' : null);
      const allowedCountries = request.shippingAddressParameters?.allowedCountryCodes;
      this.addresses = Array.isArray(allowedCountries) ? ADDRESSES.filter((a) => allowedCountries.includes(a.countryCode)) : ADDRESSES;
      if (!this.addresses.length) this.addresses = ADDRESSES;
      this.address = this.addresses[0];
      const card = cardMethods(request).cards[0];
      this.method = card;
      this.networks = card.parameters.allowedCardNetworks.filter((network) => network in TEST_CARDS);
      this.authMethods = card.parameters.allowedAuthMethods;
      this.error = null;
      this.updates = 0;
      this.closed = false;
      this.build();
    }

    build() {
      const merchant = this.request.merchantInfo?.merchantName ?? this.client.merchantInfo?.merchantName ?? '';
      this.root = element('div', { class: 'stand-in-gpay-sheet', 'data-testid': 'google-pay-sheet', 'data-state': 'loading', role: 'dialog',
        'aria-modal': 'true', 'aria-label': 'Google Pay (demo stand-in)' });
      this.network = element('select', { 'data-testid': 'google-pay-card', 'aria-label': 'Card' },
        this.networks.map((network) => element('option', { value: network, text: `${network} •••• ${TEST_CARDS[network]} (test card)` })));
      this.authMethod = element('select', { 'data-testid': 'google-pay-auth-method', 'aria-label': 'Authentication' },
        [...this.authMethods].reverse().map((method) => element('option', { value: method, text: method })));
      this.addressSelect = element('select', { 'data-testid': 'google-pay-address', 'aria-label': 'Shipping address' },
        this.addresses.map((address, index) => element('option', { value: String(index),
          text: `${address.name}, ${address.locality} ${address.postalCode}, ${address.countryCode}` })));
      this.optionSelect = element('select', { 'data-testid': 'google-pay-shipping-option', 'aria-label': 'Shipping option' });
      this.items = element('ul', { class: 'stand-in-gpay-items', 'data-testid': 'google-pay-items' });
      this.total = element('p', { class: 'stand-in-gpay-total', 'data-testid': 'google-pay-total' });
      this.errorLine = element('p', { class: 'stand-in-gpay-error', 'data-testid': 'google-pay-error', role: 'alert', hidden: true });
      this.payButton = element('button', { type: 'button', class: 'stand-in-gpay-pay', 'data-testid': 'google-pay-pay', text: 'Pay' });
      this.cancelButton = element('button', { type: 'button', class: 'stand-in-gpay-cancel', 'data-testid': 'google-pay-cancel', text: 'Cancel' });
      const row = (label, control, hidden = false) => element('label', { class: 'stand-in-gpay-row', hidden }, [
        element('span', { text: label }), control]);
      this.root.append(element('div', { class: 'stand-in-gpay-panel' }, [
        element('p', { class: 'stand-in-gpay-banner', text: 'Google Pay · demo stand-in (test root, test cards; not Google)' }),
        element('p', { class: 'stand-in-gpay-merchant', text: merchant }),
        row('Card', this.network),
        row('Authentication', this.authMethod, this.authMethods.length < 2),
        row('Ship to', this.addressSelect, !this.request.shippingAddressRequired),
        row('Delivery', this.optionSelect, !this.request.shippingOptionRequired),
        this.items, this.total, this.errorLine,
        element('div', { class: 'stand-in-gpay-actions' }, [this.cancelButton, this.payButton]),
      ]));
      this.addressSelect.addEventListener('change', () => {
        this.address = this.addresses[Number(this.addressSelect.value)];
        this.changed('SHIPPING_ADDRESS');
      });
      this.optionSelect.addEventListener('change', () => {
        this.optionId = this.optionSelect.value;
        this.changed('SHIPPING_OPTION');
      });
      this.payButton.addEventListener('click', () => this.pay());
      this.cancelButton.addEventListener('click', () => this.cancel());
      this.root.addEventListener('keydown', (event) => {
        if (event.key === 'Escape') this.cancel();
      });
    }

    async open() {
      standIn.sheet = this;
      this.render();
      document.body.append(this.root);
      // Google calls onPaymentDataChanged once as the sheet opens, with the shopper's default address and option.
      if (this.intents.includes('SHIPPING_ADDRESS') || this.intents.includes('SHIPPING_OPTION')) await this.changed('INITIALIZE');
      else this.setState('ready');
      this.network.focus();
    }

    setState(state) {
      this.root.dataset.state = state;
      const busy = state === 'processing';
      for (const control of [this.network, this.authMethod, this.addressSelect, this.optionSelect, this.payButton]) control.disabled = busy;
      this.payButton.disabled = busy || this.blocked();
    }

    blocked() {
      return this.error != null && SHIPPING_ERRORS.includes(this.error.reason);
    }

    /** The address as IntermediatePaymentData carries it: enough to price delivery. */
    redactedAddress() {
      const { administrativeArea, countryCode, locality, postalCode } = this.address;
      return { administrativeArea, countryCode, locality, postalCode };
    }

    async changed(trigger) {
      const wanted = trigger === 'INITIALIZE' || this.intents.includes(trigger);
      if (!wanted || typeof this.callbacks.onPaymentDataChanged !== 'function') {
        this.render();
        this.setState('ready');
        return;
      }
      const data = { callbackTrigger: trigger };
      if (this.request.shippingAddressRequired) data.shippingAddress = this.redactedAddress();
      if (this.request.shippingOptionRequired) data.shippingOptionData = { id: this.optionId };
      this.setState('processing');
      let update;
      try {
        update = (await this.callbacks.onPaymentDataChanged(data)) ?? {};
      } catch (error) {
        update = { error: { reason: 'OTHER_ERROR', message: String(error?.message ?? error), intent: trigger } };
      }
      if (this.closed) return;
      this.updates += 1;
      this.root.dataset.updates = String(this.updates);
      this.root.dataset.lastTrigger = trigger;
      this.apply(update);
    }

    /** A PaymentDataRequestUpdate: new totals, new shipping options, an error to show. */
    apply(update) {
      if (update.newTransactionInfo) this.transactionInfo = update.newTransactionInfo;
      if (update.newShippingOptionParameters) {
        this.shippingOptionParameters = update.newShippingOptionParameters;
        const options = this.shippingOptionParameters.shippingOptions ?? [];
        const chosen = this.shippingOptionParameters.defaultSelectedOptionId;
        this.optionId = options.some((option) => option.id === chosen) ? chosen : options[0]?.id ?? 'shipping_option_unselected';
      }
      this.error = update.error ?? null;
      this.render();
      this.setState(this.error ? 'error' : 'ready');
    }

    render() {
      const info = this.transactionInfo;
      const options = this.shippingOptionParameters?.shippingOptions ?? [];
      this.optionSelect.replaceChildren(...options.map((option) => element('option', {
        value: option.id, text: option.description ? `${option.label} (${option.description})` : option.label })));
      if (this.optionId) this.optionSelect.value = this.optionId;
      this.items.replaceChildren(...(info.displayItems ?? []).map((item) => element('li', { 'data-type': item.type }, [
        element('span', { text: item.label }), element('span', { text: money(item.price, info.currencyCode) })])));
      const label = info.totalPriceLabel ?? 'Total';
      this.total.textContent = info.totalPriceStatus === 'NOT_CURRENTLY_KNOWN' ? `${label}: —` : `${label}: ${money(info.totalPrice, info.currencyCode)}`;
      this.total.dataset.amount = info.totalPrice ?? '';
      this.total.dataset.currency = info.currencyCode;
      this.errorLine.hidden = !this.error;
      this.errorLine.textContent = this.error ? this.error.message ?? this.error.reason : '';
      if (this.error) this.errorLine.dataset.reason = this.error.reason;
      else delete this.errorLine.dataset.reason;
    }

    async pay() {
      if (this.closed || this.blocked()) return;
      this.setState('processing');
      const info = this.transactionInfo;
      let paymentData;
      try {
        const response = await fetch(MINT_URL, {
          method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, credentials: 'same-origin',
          body: JSON.stringify({
            amount: info.totalPrice, currencyCode: info.currencyCode, cardNetwork: this.network.value, authMethod: this.authMethod.value,
          }),
        });
        paymentData = await response.json();
        if (!response.ok) throw new Error(paymentData?.error?.message ?? `HTTP ${response.status}`);
      } catch (error) {
        this.apply({ error: { reason: 'OTHER_ERROR', message: `The demo could not mint a token: ${error.message}`, intent: 'PAYMENT_AUTHORIZATION' } });
        return;
      }
      paymentData.apiVersion = this.request.apiVersion;
      paymentData.apiVersionMinor = this.request.apiVersionMinor;
      if (this.request.emailRequired) paymentData.email = 'shopper@example.com';
      if (this.request.shippingAddressRequired) {
        const { name, address1, locality, administrativeArea, postalCode, countryCode } = this.address;
        paymentData.shippingAddress = { name, address1, address2: '', address3: '', locality, administrativeArea, countryCode, postalCode,
          sortingCode: '' };
      }
      if (this.request.shippingOptionRequired) paymentData.shippingOptionData = { id: this.optionId };
      standIn.paid.push(structuredClone(paymentData));
      if (!this.intents.includes('PAYMENT_AUTHORIZATION')) {
        this.close();
        this.resolve(paymentData);
        return;
      }
      let result;
      try {
        result = await this.callbacks.onPaymentAuthorized(paymentData);
      } catch (error) {
        result = { transactionState: 'ERROR', error: { reason: 'OTHER_ERROR', message: String(error?.message ?? error) } };
      }
      if (this.closed) return;
      if (result?.transactionState === 'SUCCESS') {
        this.close();
        this.resolve(paymentData);
        return;
      }
      // Google keeps the sheet open with the error; the shopper may try again or close it.
      this.apply({ error: { intent: 'PAYMENT_AUTHORIZATION', reason: 'OTHER_ERROR', ...(result?.error ?? {}) } });
    }

    cancel() {
      if (this.closed) return;
      this.close();
      this.reject(failure('CANCELED', 'User closed the Payment Request UI.'));
    }

    close() {
      this.closed = true;
      this.root.remove();
      if (standIn.sheet === this) standIn.sheet = null;
    }
  }

  class PaymentsClient {
    constructor(paymentOptions = {}) {
      const environment = paymentOptions.environment ?? 'TEST';
      if (!ENVIRONMENTS.includes(environment)) throw new Error(`PaymentsClient: environment ${environment} is not supported`);
      this.environment = environment;
      this.merchantInfo = paymentOptions.merchantInfo ?? null;
      this.callbacks = paymentOptions.paymentDataCallbacks ?? {};
      if (!document.querySelector('link[data-stand-in-gpay]')) {
        document.head.append(element('link', { rel: 'stylesheet', href: new URL('google-pay-sheet.css', BASE).href, 'data-stand-in-gpay': '' }));
      }
    }

    isReadyToPay(request) {
      const checked = cardMethods(request);
      if (checked.error) return Promise.reject(developerError(checked.error));
      const ready = checked.cards.some((card) => card.parameters.allowedCardNetworks.some((network) => network in TEST_CARDS));
      const answer = { result: ready };
      if (request.existingPaymentMethodRequired) answer.paymentMethodPresent = ready;
      return Promise.resolve(answer);
    }

    createButton(options = {}) {
      if (typeof options.onClick !== 'function') throw new Error('createButton: onClick is required');
      const color = options.buttonColor ?? 'default';
      const type = options.buttonType ?? 'buy';
      if (!BUTTON_COLORS.includes(color)) throw new Error(`createButton: buttonColor ${color} is not supported`);
      if (!BUTTON_TYPES.includes(type)) throw new Error(`createButton: buttonType ${type} is not supported`);
      const words = BUTTON_WORDS[type];
      const label = words ? `${words} Google Pay` : 'Google Pay';
      const button = element('button', {
        type: 'button', class: `stand-in-gpay-button stand-in-gpay-button-${color === 'white' ? 'white' : 'black'}`,
        'aria-label': label, 'data-button-type': type, 'data-button-color': color,
      }, [element('span', { text: words ? `${words} ` : '' }), element('strong', { text: 'G Pay' })]);
      if (options.buttonSizeMode === 'fill') button.classList.add('stand-in-gpay-button-fill');
      button.addEventListener('click', (event) => options.onClick(event));
      return element('div', { class: 'stand-in-gpay-button-container' }, [button]);
    }

    prefetchPaymentData(request) {
      // Google warms its sheet; the stand-in has nothing to fetch.
      void request;
    }

    loadPaymentData(request) {
      const problem = requestProblem(request, this.callbacks);
      if (problem) return Promise.reject(developerError(problem));
      if (standIn.sheet) return Promise.reject(developerError('a payment sheet is already open'));
      return new Promise((resolve, reject) => {
        new Sheet(this, request, resolve, reject).open();
      });
    }
  }

  window.google = window.google ?? {};
  window.google.payments = window.google.payments ?? {};
  window.google.payments.api = window.google.payments.api ?? {};
  window.google.payments.api.PaymentsClient = PaymentsClient;
  window.google.payments.api.standIn = standIn;
})();
