// pretix-orchard: the Apple Pay (and Google Pay) button on a pretix order's page, through Orchard's
// embeddable module. The page's outcome is only shown to the shopper: pretix marks the payment paid
// when Orchard's signed webhook says so, and this script then reloads the page.

const root = document.querySelector('[data-orchard-pay]');
const result = root.querySelector('[data-orchard-result]');
const text = root.dataset;
const POLL_MS = 1000;
const PATIENCE_MS = 120_000;

let polling = false;

function show(message, status) {
  result.textContent = message ?? '';
  if (status) result.dataset.status = status;
}

// Asks pretix (never Orchard, never the page's own outcome) whether the payment is confirmed.
async function waitForConfirmation() {
  if (polling) return;
  polling = true;
  show(text.textConfirming, 'confirming');
  const started = Date.now();
  for (;;) {
    try {
      const answer = await fetch(text.statusUrl, { credentials: 'same-origin', cache: 'no-store' });
      if (answer.ok) {
        const state = await answer.json();
        if (state.payment === 'confirmed' || state.order === 'p') {
          show(text.textConfirmed, 'confirmed');
          window.location.reload();
          return;
        }
      }
    } catch {
      // The next poll tries again.
    }
    if (Date.now() - started > PATIENCE_MS) show(text.textSlow, 'confirming');
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

// The last outcome of each wallet's sheet (data-apple-outcome, data-google-outcome), or of the
// request itself (data-outcome: `unavailable` once no wallet offered can pay here, or a request closed).
const ATTRIBUTES = { applePay: 'appleOutcome', googlePay: 'googleOutcome' };

function outcome({ status, detail, wallet }) {
  root.dataset[ATTRIBUTES[wallet] ?? 'outcome'] = status;
  if (status === 'success') waitForConfirmation();
  else if (status === 'unavailable') show(text.textUnavailable, 'unavailable');
  else if (!polling) show(detail, status);
}

async function start() {
  let orchard;
  try {
    orchard = await import(new URL(text.module, window.location.href).href);
  } catch (error) {
    show(text.textUnavailable, 'unavailable');
    console.error('Orchard’s module did not load', error);
    return;
  }
  // Both wallets for the one payment request, opened once: Google Pay where the organizer offers
  // it and the opened request carries its settings. The module's own messages in the order's
  // language (its shipped sets: en, de, fr, es, it, nl; English otherwise).
  const options = { clientSecret: text.clientSecret, locale: text.locale || undefined, onOutcome: outcome };
  if (typeof orchard.mountWallets !== 'function') {
    // An Orchard older than mountWallets: Apple Pay alone.
    await orchard.mount(root.querySelector('[data-orchard-apple-pay]'), options);
    return;
  }
  await orchard.mountWallets(root.querySelector('[data-orchard-apple-pay]'), {
    ...options,
    googlePay: text.googlePay === 'on',
    googlePayContainer: root.querySelector('[data-orchard-google-pay]'),
  });
}

start();
