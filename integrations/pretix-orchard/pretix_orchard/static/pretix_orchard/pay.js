// pretix-orchard: the Apple Pay (and Google Pay) button on a pretix order's page, through Orchard's
// embeddable module. The page's outcome is only shown to the shopper: pretix marks the payment paid
// when Orchard's signed webhook says so, and this script then reloads the page.

const root = document.querySelector('[data-orchard-pay]');
const result = root.querySelector('[data-orchard-result]');
const text = root.dataset;
const POLL_MS = 1000;
const PATIENCE_MS = 120_000;

let polling = false;
const outcomes = {};

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

// Says that nothing can pay here only once every wallet the page tries has said so.
function noWallet() {
  if (Object.values(outcomes).every((status) => status === 'unavailable')) show(text.textUnavailable, 'unavailable');
}

function outcome(wallet) {
  return ({ status, detail }) => {
    outcomes[wallet] = status;
    root.dataset[`${wallet}Outcome`] = status;
    if (status === 'success') {
      waitForConfirmation();
    } else if (status === 'unavailable') {
      noWallet();
    } else if (!polling) {
      show(detail, status);
    }
  };
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
  const locale = document.documentElement.lang || 'en';
  const strings = { locale: locale.split('-')[0] };
  const google = text.googlePay === 'on' && typeof orchard.mountGooglePay === 'function';
  outcomes.apple = 'starting';
  if (google) outcomes.google = 'starting';
  const wallets = [orchard.mount(root.querySelector('[data-orchard-apple-pay]'), {
    clientSecret: text.clientSecret,
    strings,
    onOutcome: outcome('apple'),
  })];
  // Google Pay for the same payment request, where the merchant has it (the opened request carries
  // its settings; the module says `unavailable` otherwise) and the module offers it.
  if (google) {
    wallets.push(orchard.mountGooglePay(root.querySelector('[data-orchard-google-pay]'), {
      clientSecret: text.clientSecret,
      strings,
      onOutcome: outcome('google'),
    }));
  }
  await Promise.all(wallets);
  noWallet();
}

start();
