// The messages Orchard's checkout module shows shoppers, in English, German, French, Spanish,
// Italian and Dutch. A mounted button takes the set for `locale` (an option), else
// `strings.locale`, else the page's <html lang>, by its language (de-CH takes `de`); English where
// there is none. The page's own `strings` override single messages of that set.
//
// English shows the server's own words for a refused payment; the other sets have the sentences
// below for it (`declined`, …), chosen by the refusal's error code, as the server's are English.

const en = {
  locale: 'en',
  payButton: 'Buy with Apple Pay',
  failureTitle: 'Payment not completed',
  cancelledDetail: 'Nothing was charged.',
  unavailableDetail: 'Apple Pay is not available on this device.',
  sdkFailed: 'Apple Pay is not available: Apple\'s script {reason}.',
  validationFailed: 'Apple Pay could not be started: {reason}.',
  updateFailed: 'The total could not be updated: {reason}.',
  authorizeFailed: '{reason}',
  authorizeTimedOut: 'The shop did not answer in time. Your payment may still go through: check your order before paying again.',
  sessionFailed: 'Apple Pay could not open: {reason}.',
  timedOut: 'the shop did not answer in time',
  networkError: 'the network connection failed',
  retryShortly: 'the shop is briefly unavailable, please try again in a moment',
  alreadyPaid: 'This order is already paid.',
  closed: 'This payment request is {status}; ask the shop for a new one.',
  requestExpired: 'The time to pay this request has passed; ask the shop for a new one.',
  requestCancelled: 'This payment request was withdrawn; ask the shop for a new one.',
  requestProcessing: 'A payment for this request is being confirmed; check your order before paying again.',
  openFailed: 'The payment could not be loaded: {reason}.',
  googlePayButton: 'Buy with Google Pay',
  googlePayScriptFailed: 'Google Pay is not available: Google\'s script {reason}.',
  googlePayUnavailable: 'Google Pay is not available in this browser.',
  googlePayFailed: 'Google Pay could not complete: {reason}.',
  noWallet: 'Neither Apple Pay nor Google Pay is available in this browser.',
  total: 'Total',
};

const de = {
  locale: 'de',
  payButton: 'Mit Apple Pay kaufen',
  failureTitle: 'Zahlung nicht abgeschlossen',
  cancelledDetail: 'Es wurde nichts abgebucht.',
  unavailableDetail: 'Apple Pay ist auf diesem Gerät nicht verfügbar.',
  sdkFailed: 'Apple Pay ist nicht verfügbar: Apples Skript konnte nicht geladen werden.',
  validationFailed: 'Apple Pay konnte nicht gestartet werden: {reason}.',
  updateFailed: 'Der Gesamtbetrag konnte nicht aktualisiert werden: {reason}.',
  authorizeTimedOut: 'Der Shop hat nicht rechtzeitig geantwortet. Die Zahlung wurde möglicherweise trotzdem ausgeführt: Prüfen Sie Ihre Bestellung, bevor Sie erneut zahlen.',
  sessionFailed: 'Apple Pay konnte nicht geöffnet werden: {reason}.',
  timedOut: 'der Shop hat nicht rechtzeitig geantwortet',
  networkError: 'die Netzwerkverbindung ist fehlgeschlagen',
  retryShortly: 'der Shop ist kurz nicht erreichbar, bitte versuchen Sie es gleich noch einmal',
  shopRefused: 'der Shop konnte die Anfrage nicht bearbeiten',
  alreadyPaid: 'Diese Bestellung ist bereits bezahlt.',
  closed: 'Diese Zahlungsanforderung kann nicht mehr bezahlt werden; bitten Sie den Shop um eine neue.',
  requestExpired: 'Die Frist für diese Zahlung ist abgelaufen; bitten Sie den Shop um eine neue Zahlungsanforderung.',
  requestCancelled: 'Diese Zahlungsanforderung wurde zurückgezogen; bitten Sie den Shop um eine neue.',
  requestProcessing: 'Eine Zahlung für diese Anforderung wird gerade bestätigt; prüfen Sie Ihre Bestellung, bevor Sie erneut zahlen.',
  openFailed: 'Die Zahlung konnte nicht geladen werden: {reason}.',
  googlePayButton: 'Mit Google Pay kaufen',
  googlePayScriptFailed: 'Google Pay ist nicht verfügbar: Googles Skript konnte nicht geladen werden.',
  googlePayUnavailable: 'Google Pay ist in diesem Browser nicht verfügbar.',
  googlePayFailed: 'Google Pay konnte die Zahlung nicht abschließen: {reason}.',
  noWallet: 'Weder Apple Pay noch Google Pay ist in diesem Browser verfügbar.',
  total: 'Gesamt',
  declined: 'Ihre Karte wurde abgelehnt. Es wurde nichts abgebucht; Sie können es mit einer anderen Karte versuchen.',
  notConfirmed: 'Ihre Zahlung konnte noch nicht bei der Bank bestätigt werden. Bitte warten Sie einen Moment und versuchen Sie es dann erneut: Sie werden nicht doppelt belastet.',
  notVerified: 'Diese Zahlung konnte nicht geprüft werden. Es wurde nichts abgebucht; bitte versuchen Sie es erneut.',
  orderChanged: 'Die Bestellung hat sich während der Zahlung geändert. Es wurde nichts abgebucht; bitte zahlen Sie erneut.',
  refused: 'Die Zahlung konnte nicht abgeschlossen werden. Es wurde nichts abgebucht.',
};

// French puts a no-break space before a colon or semicolon.
const fr = {
  locale: 'fr',
  payButton: 'Acheter avec Apple Pay',
  failureTitle: 'Paiement non effectué',
  cancelledDetail: 'Aucun montant n’a été débité.',
  unavailableDetail: 'Apple Pay n’est pas disponible sur cet appareil.',
  sdkFailed: 'Apple Pay n’est pas disponible\u00a0: le script d’Apple n’a pas pu être chargé.',
  validationFailed: 'Apple Pay n’a pas pu démarrer\u00a0: {reason}.',
  updateFailed: 'Le total n’a pas pu être mis à jour\u00a0: {reason}.',
  authorizeTimedOut: 'La boutique n’a pas répondu à temps. Votre paiement a peut-être quand même abouti\u00a0: vérifiez votre commande avant de payer à nouveau.',
  sessionFailed: 'Apple Pay n’a pas pu s’ouvrir\u00a0: {reason}.',
  timedOut: 'la boutique n’a pas répondu à temps',
  networkError: 'la connexion réseau a échoué',
  retryShortly: 'la boutique est momentanément indisponible, veuillez réessayer dans un instant',
  shopRefused: 'la boutique n’a pas pu traiter la demande',
  alreadyPaid: 'Cette commande est déjà payée.',
  closed: 'Cette demande de paiement ne peut plus être réglée\u00a0; demandez-en une nouvelle à la boutique.',
  requestExpired: 'Le délai de paiement de cette demande est dépassé\u00a0; demandez-en une nouvelle à la boutique.',
  requestCancelled: 'Cette demande de paiement a été retirée\u00a0; demandez-en une nouvelle à la boutique.',
  requestProcessing: 'Un paiement pour cette demande est en cours de confirmation\u00a0; vérifiez votre commande avant de payer à nouveau.',
  openFailed: 'Le paiement n’a pas pu être chargé\u00a0: {reason}.',
  googlePayButton: 'Acheter avec Google Pay',
  googlePayScriptFailed: 'Google Pay n’est pas disponible\u00a0: le script de Google n’a pas pu être chargé.',
  googlePayUnavailable: 'Google Pay n’est pas disponible dans ce navigateur.',
  googlePayFailed: 'Google Pay n’a pas pu finaliser le paiement\u00a0: {reason}.',
  noWallet: 'Ni Apple Pay ni Google Pay ne sont disponibles dans ce navigateur.',
  total: 'Total',
  declined: 'Votre carte a été refusée. Aucun montant n’a été débité\u00a0; vous pouvez essayer avec une autre carte.',
  notConfirmed: 'Votre paiement n’a pas encore pu être confirmé par la banque. Patientez un instant, puis réessayez\u00a0: vous ne serez pas débité deux fois.',
  notVerified: 'Ce paiement n’a pas pu être vérifié. Aucun montant n’a été débité\u00a0; veuillez réessayer.',
  orderChanged: 'La commande a changé pendant le paiement. Aucun montant n’a été débité\u00a0; veuillez payer à nouveau.',
  refused: 'Le paiement n’a pas pu aboutir. Aucun montant n’a été débité.',
};

const es = {
  locale: 'es',
  payButton: 'Comprar con Apple Pay',
  failureTitle: 'Pago no completado',
  cancelledDetail: 'No se ha realizado ningún cargo.',
  unavailableDetail: 'Apple Pay no está disponible en este dispositivo.',
  sdkFailed: 'Apple Pay no está disponible: no se pudo cargar el script de Apple.',
  validationFailed: 'No se pudo iniciar Apple Pay: {reason}.',
  updateFailed: 'No se pudo actualizar el total: {reason}.',
  authorizeTimedOut: 'La tienda no respondió a tiempo. Es posible que el pago se haya realizado: compruebe su pedido antes de volver a pagar.',
  sessionFailed: 'No se pudo abrir Apple Pay: {reason}.',
  timedOut: 'la tienda no respondió a tiempo',
  networkError: 'falló la conexión de red',
  retryShortly: 'la tienda no está disponible en este momento, inténtelo de nuevo en unos instantes',
  shopRefused: 'la tienda no pudo procesar la solicitud',
  alreadyPaid: 'Este pedido ya está pagado.',
  closed: 'Esta solicitud de pago ya no se puede pagar; pida una nueva a la tienda.',
  requestExpired: 'El plazo para pagar esta solicitud ha vencido; pida una nueva a la tienda.',
  requestCancelled: 'Esta solicitud de pago se ha retirado; pida una nueva a la tienda.',
  requestProcessing: 'Se está confirmando un pago de esta solicitud; compruebe su pedido antes de volver a pagar.',
  openFailed: 'No se pudo cargar el pago: {reason}.',
  googlePayButton: 'Comprar con Google Pay',
  googlePayScriptFailed: 'Google Pay no está disponible: no se pudo cargar el script de Google.',
  googlePayUnavailable: 'Google Pay no está disponible en este navegador.',
  googlePayFailed: 'Google Pay no pudo completar el pago: {reason}.',
  noWallet: 'Ni Apple Pay ni Google Pay están disponibles en este navegador.',
  total: 'Total',
  declined: 'Su tarjeta ha sido rechazada. No se ha realizado ningún cargo; puede probar con otra tarjeta.',
  notConfirmed: 'Su pago aún no se ha podido confirmar con el banco. Espere un momento y vuelva a intentarlo: no se le cobrará dos veces.',
  notVerified: 'No se pudo verificar este pago. No se ha realizado ningún cargo; inténtelo de nuevo.',
  orderChanged: 'El pedido cambió mientras se pagaba. No se ha realizado ningún cargo; vuelva a pagar.',
  refused: 'No se pudo completar el pago. No se ha realizado ningún cargo.',
};

const it = {
  locale: 'it',
  payButton: 'Acquista con Apple Pay',
  failureTitle: 'Pagamento non completato',
  cancelledDetail: 'Non è stato addebitato nulla.',
  unavailableDetail: 'Apple Pay non è disponibile su questo dispositivo.',
  sdkFailed: 'Apple Pay non è disponibile: non è stato possibile caricare lo script di Apple.',
  validationFailed: 'Impossibile avviare Apple Pay: {reason}.',
  updateFailed: 'Impossibile aggiornare il totale: {reason}.',
  authorizeTimedOut: 'Il negozio non ha risposto in tempo. Il pagamento potrebbe essere comunque andato a buon fine: controlla l’ordine prima di pagare di nuovo.',
  sessionFailed: 'Impossibile aprire Apple Pay: {reason}.',
  timedOut: 'il negozio non ha risposto in tempo',
  networkError: 'la connessione di rete non è riuscita',
  retryShortly: 'il negozio è momentaneamente non disponibile, riprova tra qualche istante',
  shopRefused: 'il negozio non è riuscito a elaborare la richiesta',
  alreadyPaid: 'Questo ordine è già stato pagato.',
  closed: 'Questa richiesta di pagamento non può più essere pagata; chiedine una nuova al negozio.',
  requestExpired: 'Il termine per pagare questa richiesta è scaduto; chiedine una nuova al negozio.',
  requestCancelled: 'Questa richiesta di pagamento è stata ritirata; chiedine una nuova al negozio.',
  requestProcessing: 'Un pagamento per questa richiesta è in fase di conferma; controlla l’ordine prima di pagare di nuovo.',
  openFailed: 'Impossibile caricare il pagamento: {reason}.',
  googlePayButton: 'Acquista con Google Pay',
  googlePayScriptFailed: 'Google Pay non è disponibile: non è stato possibile caricare lo script di Google.',
  googlePayUnavailable: 'Google Pay non è disponibile in questo browser.',
  googlePayFailed: 'Google Pay non è riuscito a completare il pagamento: {reason}.',
  noWallet: 'Né Apple Pay né Google Pay sono disponibili in questo browser.',
  total: 'Totale',
  declined: 'La carta è stata rifiutata. Non è stato addebitato nulla; puoi provare con un’altra carta.',
  notConfirmed: 'Non è stato ancora possibile confermare il pagamento con la banca. Attendi un momento e riprova: non ti verrà addebitato due volte.',
  notVerified: 'Non è stato possibile verificare questo pagamento. Non è stato addebitato nulla; riprova.',
  orderChanged: 'L’ordine è cambiato durante il pagamento. Non è stato addebitato nulla; paga di nuovo.',
  refused: 'Impossibile completare il pagamento. Non è stato addebitato nulla.',
};

const nl = {
  locale: 'nl',
  payButton: 'Kopen met Apple Pay',
  failureTitle: 'Betaling niet voltooid',
  cancelledDetail: 'Er is niets afgeschreven.',
  unavailableDetail: 'Apple Pay is niet beschikbaar op dit apparaat.',
  sdkFailed: 'Apple Pay is niet beschikbaar: het script van Apple kon niet worden geladen.',
  validationFailed: 'Apple Pay kon niet worden gestart: {reason}.',
  updateFailed: 'Het totaalbedrag kon niet worden bijgewerkt: {reason}.',
  authorizeTimedOut: 'De winkel heeft niet op tijd geantwoord. Uw betaling is mogelijk toch gelukt: controleer uw bestelling voordat u opnieuw betaalt.',
  sessionFailed: 'Apple Pay kon niet worden geopend: {reason}.',
  timedOut: 'de winkel heeft niet op tijd geantwoord',
  networkError: 'de netwerkverbinding is mislukt',
  retryShortly: 'de winkel is even niet bereikbaar, probeer het zo opnieuw',
  shopRefused: 'de winkel kon het verzoek niet verwerken',
  alreadyPaid: 'Deze bestelling is al betaald.',
  closed: 'Dit betaalverzoek kan niet meer worden betaald; vraag de winkel om een nieuw verzoek.',
  requestExpired: 'De termijn om dit verzoek te betalen is verstreken; vraag de winkel om een nieuw verzoek.',
  requestCancelled: 'Dit betaalverzoek is ingetrokken; vraag de winkel om een nieuw verzoek.',
  requestProcessing: 'Een betaling voor dit verzoek wordt nog bevestigd; controleer uw bestelling voordat u opnieuw betaalt.',
  openFailed: 'De betaling kon niet worden geladen: {reason}.',
  googlePayButton: 'Kopen met Google Pay',
  googlePayScriptFailed: 'Google Pay is niet beschikbaar: het script van Google kon niet worden geladen.',
  googlePayUnavailable: 'Google Pay is niet beschikbaar in deze browser.',
  googlePayFailed: 'Google Pay kon de betaling niet voltooien: {reason}.',
  noWallet: 'Apple Pay en Google Pay zijn geen van beide beschikbaar in deze browser.',
  total: 'Totaal',
  declined: 'Uw kaart is geweigerd. Er is niets afgeschreven; u kunt een andere kaart proberen.',
  notConfirmed: 'Uw betaling kon nog niet bij de bank worden bevestigd. Wacht even en probeer het dan opnieuw: er wordt niet twee keer afgeschreven.',
  notVerified: 'Deze betaling kon niet worden gecontroleerd. Er is niets afgeschreven; probeer het opnieuw.',
  orderChanged: 'De bestelling is tijdens het betalen gewijzigd. Er is niets afgeschreven; betaal opnieuw.',
  refused: 'De betaling kon niet worden voltooid. Er is niets afgeschreven.',
};

/** Every set the module ships, by language; each has every message of `en` (the others fall back on it). */
export const shippedStrings = Object.freeze({ en, de, fr, es, it, nl });

/** A refusal's error code → the message of the translated sets that says it (`refused` for any other). */
const REFUSALS = {
  payment_failed: 'declined',
  payment_unknown: 'notConfirmed',
  invalid_token: 'notVerified',
  simulator_token: 'notVerified',
  payment_mismatch: 'notVerified',
  replayed_payment: 'notVerified',
  order_changed: 'orderChanged',
};

/** The set's sentence for a refused payment's error `code`, or null where the set shows the server's own (English). */
export function refusalMessage(code, t) {
  const key = (typeof code === 'string' && Object.hasOwn(REFUSALS, code)) ? REFUSALS[code] : 'refused';
  const message = t[key];
  return typeof message === 'string' && message ? message : null;
}

/** The shipped set for a language tag ('de', 'de-CH', 'de_AT', 'DE'), or null. */
function shippedSet(tag) {
  if (typeof tag !== 'string') return null;
  const language = tag.trim().toLowerCase().split(/[-_]/)[0];
  return Object.hasOwn(shippedStrings, language) ? shippedStrings[language] : null;
}

/**
 * The messages a mounted button shows: the shipped set for `options.locale`, else for
 * `options.strings.locale`, else for the page's <html lang> (English where none is shipped), with
 * the page's `strings` over it. `locale` stays the tag asked for where its language is shipped
 * (de-CH formats money the Swiss way); a page's own `strings.locale` is kept as it is.
 */
export function shopperStrings(options = {}) {
  const own = options.strings && typeof options.strings === 'object' ? options.strings : {};
  const given = (tag) => typeof tag === 'string' && tag.trim() !== '';
  const asked = [options.locale, own.locale, globalThis.document?.documentElement?.lang].find(given) ?? 'en';
  const set = shippedSet(asked);
  const chosen = { ...en, ...(set ?? {}), locale: set ? asked.trim() : 'en' };
  for (const [key, value] of Object.entries(own)) if (typeof value === 'string') chosen[key] = value;
  if (given(options.locale) && set) chosen.locale = options.locale.trim();
  return chosen;
}
