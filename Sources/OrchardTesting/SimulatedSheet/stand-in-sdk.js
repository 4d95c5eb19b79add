// Orchard's STAND-IN for Apple's Apple Pay JS SDK, for `orchard-sandbox demo --stand-in-sdk` and
// the browser tests only: our own code, since Apple's SDK cannot run offline and is not copied.
//
// It does what Apple's SDK does in a browser without Apple Pay of its own (Chrome, Edge,
// Firefox, where the shopper pays by scanning a code with an iPhone), after the delay a script
// from a CDN takes: it defines ApplePaySession, then <apple-pay-button>. The session is the
// demo's simulated sheet, with what such a browser cannot know: applePayCapabilities answers
// paymentCredentialStatusUnknown, and there is no canMakePaymentsWithActiveCard. Where the
// browser has PaymentRequest (Chrome, Edge), a request whose only method is Apple Pay runs on
// that session, as Apple's SDK maps it (the sheet's simulated-payment-request.js).
(() => {
  const delay = Number(new URL(document.currentScript?.src ?? location.href).searchParams.get('delay') ?? 500);
  setTimeout(async () => {
    if (!('ApplePaySession' in window)) {
      await import(new URL('/demo/simulated-sheet.js', location.origin).href);
      const session = window.ApplePaySession;
      session.applePayCapabilities = async () => ({ paymentCredentialStatus: 'paymentCredentialStatusUnknown' });
      delete session.canMakePaymentsWithActiveCard;
      window.__standInSession = true;
    }
    // Drawn as Apple's black button, through the CSSOM (a strict CSP allows no inline style).
    customElements.define('apple-pay-button', class extends HTMLElement {
      connectedCallback() {
        this.textContent = ' Pay (stand-in SDK)';
        Object.assign(this.style, {
          display: 'flex', alignItems: 'center', justifyContent: 'center', height: '48px', borderRadius: '8px',
          background: '#000', color: '#fff', font: '600 17px system-ui, sans-serif', cursor: 'pointer',
        });
      }
    });
  }, delay);
})();
