"""pretix-orchard against a real pretix (issue 50): pretix==2026.8.0 from PyPI on SQLite with the
plugin installed from integrations/pretix-orchard, behind real nginx that serves Orchard's module
under /orchard/; `orchard-sandbox demo --processor worldpay --google-pay`; headless Chromium through
pretix's own checkout and order page, paying on the simulated Apple Pay sheet. Every wait polls
with a deadline. Run by scripts/pretix-test (inside .venv-pretix)."""

import base64
import json
import os
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from pretix_harness import (  # noqa: E402
    MERCHANT, WATCHED, HeldOrchard, Nginx, Pretix, SmtpSink, WebhookRelay, create_api_key, django_ready, free_port,
    orchard_api, wait_until, watch_demo,
)
from harness import BUTTON, DESKTOP, SANDBOX, Browser, Demo  # noqa: E402

from selenium.webdriver.common.by import By  # noqa: E402

# Not "orchard": the shop serves Orchard under /orchard/, which would shadow an organizer of that slug.
ORGANIZER, EVENT = "ciderworks", "festival"
UNKNOWN_EVENT, QUICK_EVENT, HELD_EVENT = "unknown", "quick", "held"
PRICE = Decimal("25.00")
GOOGLE_BUTTON = '[data-testid="google-pay-button"]'
GOOGLE_SHEET = '[data-testid="google-pay-sheet"]'

env = {}


def setUpModule():
    # unittest skips tearDownModule when setUpModule fails: stop what did start, then fail.
    try:
        start_everything()
    except BaseException:
        tearDownModule()
        raise


def start_everything():
    started = time.monotonic()
    env["smtp"] = SmtpSink()
    env["relay"] = relay = WebhookRelay()
    env["demo"] = demo = Demo("--processor", "worldpay", "--google-pay", "--webhook-url", relay.url)
    watch_demo(demo, "orchard-sandbox demo")
    env["api_key"] = create_api_key(demo.state_dir)
    env["webhook_secret"] = (demo.state_dir / "webhook-secret").read_text().strip()
    # A second Orchard, another merchant with its own key and secret, whose mock Worldpay takes the
    # first payment and then drops the connection: that payment is `unknown` until Orchard's
    # reconciler asks the processor. Its webhooks come to the same pretix URL.
    env["relay2"] = relay2 = WebhookRelay()
    env["demo2"] = demo2 = Demo("--processor", "worldpay", "--processor-fault-once", "drop", "--webhook-url", relay2.url)
    watch_demo(demo2, "the second orchard-sandbox demo")
    env["api_key2"] = create_api_key(demo2.state_dir)
    env["webhook_secret2"] = (demo2.state_dir / "webhook-secret").read_text().strip()
    # A third Orchard for the first demo's merchant (its own store and key, the same webhook secret
    # and URL) that reaches the mock Worldpay through a relay the tests can make hold its answers.
    env["held"] = held = HeldOrchard(demo, relay.url)
    env["api_key_held"] = create_api_key(demo.state_dir, held.config.name)
    nginx_port, pretix_port = free_port(), free_port()
    env["pretix"] = pretix = Pretix(f"http://localhost:{nginx_port}", env["smtp"].port,
                                    f"{demo.url} {demo2.url} {held.url}", reconcile_after=0)
    pretix.migrate()
    env["django"] = django_ready(pretix.env)
    env["django"].__enter__()
    create_shop(demo.url, env["api_key"], env["webhook_secret"], demo2.url, env["api_key2"], env["webhook_secret2"],
                held.url, env["api_key_held"])
    pretix.start(pretix_port)
    env["nginx"] = Nginx(nginx_port, pretix_port, demo.port)
    for each in (relay, relay2):
        each.target = f"http://127.0.0.1:{nginx_port}/_orchard/webhook/"
        each.target_host = f"localhost:{nginx_port}"
    print(f"pretix-test: pretix, three Orchards and nginx up in {time.monotonic() - started:.1f} s", file=sys.stderr)


def tearDownModule():
    WATCHED.clear()  # what stops now is no failure
    for name in ("relay", "relay2", "nginx", "pretix", "held", "demo", "demo2", "smtp"):
        if name in env:
            try:
                env.pop(name).stop()
            except Exception as error:  # keep stopping the others
                print(f"pretix-test: stopping {name}: {error}", file=sys.stderr)


def create_shop(api_url, api_key, webhook_secret, api_url2, api_key2, webhook_secret2, held_url, held_key):
    """An organizer with four events using the plugin, each with a ticket and a quota: `festival`
    on the first Orchard, `unknown` on the second, `quick` on the first with a one-minute payment
    term, `held` on the third; and a team token for pretix's REST API. Through Django's ORM, as
    pretix's admin stores them (so no event has Orchard's GET /v1/merchant answer stored yet: the
    first payment asks for it)."""
    from django.utils.timezone import now
    from django_scopes import scopes_disabled
    from pretix.base.models import Event, Item, Organizer, Quota, Team, User

    with scopes_disabled():
        organizer = Organizer.objects.create(name="Orchard Test Organizer", slug=ORGANIZER)
        for slug, name, url, key, secret, extra in [
            (EVENT, "Cider Festival", api_url, api_key, webhook_secret, {}),
            (UNKNOWN_EVENT, "Perry Night", api_url2, api_key2, webhook_secret2, {"payment_orchard_google_pay": False}),
            (QUICK_EVENT, "Quick Tasting", api_url, api_key, webhook_secret,
             {"payment_term_mode": "minutes", "payment_term_minutes": 1}),
            (HELD_EVENT, "Slow Pressing", held_url, held_key, webhook_secret, {"payment_term_days": 20}),
        ]:
            event = Event.objects.create(
                organizer=organizer, name=name, slug=slug, currency="EUR", live=True,
                date_from=now() + timedelta(days=30), plugins="pretix_orchard")
            for key_name, value in {
                "invoice_address_asked": False, "attendee_names_asked": False, "payment_term_days": 7,
                "payment_orchard__enabled": True, "payment_orchard_api_url": url,
                "payment_orchard_api_key": key, "payment_orchard_webhook_secret": secret,
                "payment_orchard_button_module": "/orchard/orchard.js", "payment_orchard_country": "DE",
                "payment_orchard_capture": "immediate", "payment_orchard_google_pay": True, **extra,
            }.items():
                event.settings.set(key_name, value)
            item = Item.objects.create(event=event, name="Festival ticket", default_price=PRICE, admission=True)
            quota = Quota.objects.create(event=event, name="Tickets", size=100)
            quota.items.add(item)
        user = User.objects.create_user("backoffice@example.org", "orchard-test-password")
        team = Team.objects.create(organizer=organizer, name="Admins", all_events=True, all_event_permissions=True,
                                   all_organizer_permissions=True)
        team.members.add(user)
        env["api_token"] = team.tokens.create(name="tests").token


def pretix_api(method, path, body=None, event=EVENT):
    request = urllib.request.Request(
        f"http://127.0.0.1:{env['nginx'].port}/api/v1/organizers/{ORGANIZER}/events/{event}{path}",
        data=None if body is None else json.dumps(body).encode(), method=method,
        headers={"Authorization": f"Token {env['api_token']}", "Content-Type": "application/json",
                 "Host": f"localhost:{env['nginx'].port}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            return error.code, json.loads(text or b"null")
        except ValueError:  # an error page: say what pretix's server logged
            raise AssertionError(f"pretix answered {error.code} to {method} {path}; its log:\n"
                                 + env["pretix"].server.output(20000)) from None


def orchard(method, path, body=None, idempotency_key=None):
    return orchard_api(env["demo"].url, env["api_key"], method, path, body, idempotency_key)


def orchard_held(method, path, body=None):
    return orchard_api(env["held"].url, env["api_key_held"], method, path, body)


def order(code):
    from django_scopes import scopes_disabled
    from pretix.base.models import Order
    with scopes_disabled():
        return Order.objects.get(code=code)


def payment_of(code, local_id=1):
    from django_scopes import scopes_disabled
    from pretix.base.models import OrderPayment
    with scopes_disabled():
        return OrderPayment.objects.select_related("order", "order__event").get(order__code=code, local_id=local_id)


def log_actions(code):
    from django_scopes import scopes_disabled
    with scopes_disabled():
        return [entry.action_type for entry in order(code).all_logentries().order_by("datetime", "pk")]


def signed(body, secret=None, message_id=None, timestamp=None):
    """Standard Webhooks headers for `body` (bytes), as Orchard signs: `v1,` HMAC-SHA256 over
    "<id>.<timestamp>.<body>" with the secret's key."""
    from standardwebhooks import Webhook
    message_id = message_id or json.loads(body)["id"]
    moment = timestamp or datetime.now(timezone.utc)
    signature = Webhook(secret or env["webhook_secret"]).sign(message_id, moment, body.decode())
    return {"webhook-id": message_id, "webhook-timestamp": str(int(moment.timestamp())),
            "webhook-signature": signature, "Content-Type": "application/json"}


def post_webhook(body, headers):
    return env["relay"].post(body, headers)


def mint_and_authorize(request_id, amount, demo="demo", api_key="api_key", url=None):
    """Pays a payment request as the shop's iOS app would: a token from `orchard-sandbox token mint`
    bound to it, through POST /v1/payment-requests/{id}/authorize (at `url`, by default the demo's)."""
    token = subprocess.run(
        [str(SANDBOX), "token", "mint", "--state-dir", str(env[demo].state_dir), "--payment-request", request_id,
         "--amount", str(amount), "--currency", "EUR"],
        check=True, capture_output=True, text=True, timeout=60, env={**os.environ, "ORCHARD_TOOLS": "1"}).stdout
    return orchard_api(url or env[demo].url, env[api_key], "POST", f"/v1/payment-requests/{request_id}/authorize",
                       json.loads(token))


def queue_processor_answers(demo, answers):
    """Has the demo's mock processor answer its next authorizations so (`POST /_mock/next-answers`,
    over TLS with the demo's test CA): a declined card when the test chooses."""
    import ssl
    config = json.loads((env[demo].state_dir / "orchard.json").read_text())
    base = config["merchants"][0]["processor"]["baseURL"].rstrip("/")
    context = ssl.create_default_context(cafile=str(env[demo].state_dir / "test-ca.pem"))
    request = urllib.request.Request(f"{base}/_mock/next-answers", data=json.dumps({"answers": answers}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, context=context, timeout=10) as answer:
        assert json.load(answer)["queued"] == len(answers)


class PretixOrchardCase(unittest.TestCase):
    def setUp(self):
        env["pretix"].server.check_alive()
        env["nginx"].child.check_alive()
        env["relay"].dropping = False
        self.deliveries_before = {name: len(env[name].deliveries) for name in ("relay", "relay2")}

    def tearDown(self):
        # A browser wait that timed out because a server died says so, with its exit status and output.
        for check in WATCHED:
            check()
        # Every delivery Orchard made meanwhile that reached pretix was accepted: a 500 there (which
        # Orchard would retry, so no test would notice) is a bug.
        for name, before in self.deliveries_before.items():
            with env[name].lock:
                refused = [(json.loads(d["body"])["type"], d["status"], d["body"][:300])
                           for d in env[name].deliveries[before:] if not d["dropped"] and d["status"] != 200]
            self.assertEqual(refused, [], f"deliveries pretix did not accept ({name})")

    def browser(self):
        browser = Browser(DESKTOP)
        self.addCleanup(browser.quit)
        return browser

    def place_order(self, browser, email="camille@example.org", event=EVENT):
        """pretix's own checkout in the browser: a ticket into the cart, the email, Apple Pay as the
        payment method, the binding order; returns the order's code, secret and page URL."""
        base = f"{env['nginx'].url}/{ORGANIZER}/{event}/"
        browser.open(base)
        field = browser.wait(lambda: next(iter(browser.driver.find_elements(
            By.CSS_SELECTOR, 'input[name^="item_"]')), None), 30, "the ticket's quantity field")
        if field.get_attribute("type") == "checkbox":
            field.click()
        else:
            field.clear()
            field.send_keys("1")
        browser.find("#btn-add-to-cart").click()
        browser.wait(lambda: "/checkout/" in browser.driver.current_url or browser.find_all(".cart-row"), 30,
                     "the cart")
        browser.open(base + "checkout/start")
        email_field = browser.wait_for('input[name="email"]', 30)
        email_field.clear()
        email_field.send_keys(email)
        repeat = browser.find_all('input[name="email_repeat"]')
        if repeat:
            repeat[0].send_keys(email)
        browser.find('.checkout-button-row button[type="submit"], button.btn-primary[type="submit"]').click()
        browser.wait(lambda: browser.find_all('input[name="payment"][value="orchard"]'), 30, "the payment step")
        choice = browser.find('input[name="payment"][value="orchard"]')
        browser.driver.execute_script("arguments[0].click();", choice)
        browser.find('.checkout-button-row button[type="submit"], button.btn-primary[type="submit"]').click()
        browser.wait(lambda: "/checkout/confirm/" in browser.driver.current_url, 30, "the confirmation step")
        for box in browser.find_all('input[type="checkbox"][required]'):
            box.click()
        browser.find('.checkout-button-row button[type="submit"], button.btn-primary[type="submit"]').click()
        browser.wait(lambda: "/order/" in browser.driver.current_url, 60, "the order's page")
        parts = browser.driver.current_url.split("/order/")[1].split("/")
        return parts[0], parts[1], browser.driver.current_url.split("?")[0]

    def paid_without_capture(self, email):
        """An order of the first event with capture set to manual (for this test), paid in app:
        `(browser, order code, Orchard payment ID)`, the payment authorized and not captured."""
        from django_scopes import scopes_disabled
        from pretix.base.models import Event
        with scopes_disabled():
            event = Event.objects.get(slug=EVENT)
            event.settings.set("payment_orchard_capture", "manual")
        self.addCleanup(lambda: event.settings.set("payment_orchard_capture", "immediate"))
        browser = self.browser()
        code, _, _ = self.place_order(browser, email=email)
        status, paid = mint_and_authorize(payment_of(code).info_data["payment_request"], 2500)
        self.assertEqual(status, 200, paid)
        self.wait_paid(code)
        return browser, code, paid["payment"]["id"]

    def wait_paid(self, code, timeout=30):
        wait_until(lambda: order(code).status == "p", timeout, f"pretix order {code} paid")

    def wait_orchard(self, path, check, timeout=30, what=None):
        def ready():
            status, answer = orchard("GET", path)
            return answer if status == 200 and check(answer) else None
        return wait_until(ready, timeout, what or path, interval=0.2)


class CheckoutTests(PretixOrchardCase):
    def test_1_pays_on_pretix_order_page_confirmed_by_the_webhook_and_refunds_in_part(self):
        browser = self.browser()
        code, secret, page = self.place_order(browser)
        payment = payment_of(code)
        info = payment.info_data
        self.assertEqual(payment.provider, "orchard")
        self.assertEqual(payment.state, "created")
        request_id = info["payment_request"]

        # Orchard got the order: its total, currency, lines, pretix's order code as reference.
        status, request = orchard("GET", f"/v1/payment-requests/{request_id}")
        self.assertEqual(status, 200, request)
        self.assertEqual((request["amount"], request["currency"], request["reference"], request["status"]),
                         (2500, "EUR", code, "requires_payment"))
        self.assertEqual([(line["label"], line["amount"]) for line in request["paymentRequest"]["lineItems"]],
                         [("Festival ticket", "25.00")])
        self.assertEqual(request["metadata"], {"pretix_event": f"{ORGANIZER}/{EVENT}", "pretix_payment": f"{code}-P-1"})
        # The sheet's total names the event, not the merchant (totalLabel).
        self.assertEqual(request["paymentRequest"]["total"]["label"], "Cider Festival")
        # Capture immediate: Orchard captures (capture automatic), not the plugin.
        self.assertEqual(request["capture"], "automatic")
        self.assertEqual(info["capture"], "automatic")

        # The same Idempotency-Key answers the same request: a retried checkout never makes a second one.
        from pretix_orchard.payment import OrchardProvider, idempotency_key
        from django_scopes import scopes_disabled
        self.assertEqual(request["idempotencyKey"], idempotency_key(payment))
        with scopes_disabled():
            provider = OrchardProvider(payment.order.event)
            again = provider.client().create_payment_request(provider.request_body(payment), idempotency_key(payment))
        self.assertEqual(again["id"], request_id)

        # The order's page shows Orchard's button; the simulated sheet shows pretix's total.
        browser.wait_button_enabled(30).click()
        browser.wait_sheet("ready")
        self.assertEqual(browser.sheet_total(), "25.00")
        browser.screenshot("pretix-01-order-page-sheet")
        browser.find('[data-testid="sheet-pay"]').click()
        # The page says so, and reloads when pretix (not the page) has confirmed the payment.
        browser.wait(lambda: "We successfully received your payment" in browser.find("body").text, 60,
                     "pretix's paid order page")
        browser.screenshot("pretix-02-order-paid")
        self.assertEqual(order(code).status, "p")
        payment = payment_of(code)
        self.assertEqual(payment.state, "confirmed")
        authorized = wait_until(lambda: env["relay"].of_type("payment.authorized", request_id), 30,
                                "payment.authorized recorded by the relay")
        self.assertEqual([d["status"] for d in authorized], [200], "one signed payment.authorized, accepted")
        headers = {name.lower(): value for name, value in authorized[0]["headers"].items()}
        self.assertEqual(headers.get("orchard-merchant"), MERCHANT)
        self.assertEqual(json.loads(authorized[0]["body"])["data"]["paymentRequest"]["idempotencyKey"],
                         request["idempotencyKey"])
        self.assertIn("pretix.event.order.paid", log_actions(code))
        self.assertEqual(browser.problems(allowed=[r"/favicon\.ico"]), [])

        # Captured at once (capture: immediate) by Orchard itself: its payment.settled tells pretix,
        # and the plugin made no capture of its own.
        orchard_payment = payment.info_data["orchard_payment"]
        self.wait_orchard(f"/v1/payments/{orchard_payment}", lambda a: a["payment"]["state"] == "settled",
                          what="Orchard's payment settled")
        settled = wait_until(lambda: env["relay"].of_type("payment.settled", request_id), 30, "payment.settled recorded")
        self.assertEqual([d["status"] for d in settled], [200])
        wait_until(lambda: payment_of(code).info_data.get("captured"), 30, "pretix records the capture")
        self.assertNotIn("pretix_orchard.captured", log_actions(code))
        self.assertEqual(payment_of(code).info_data["last_four"], "1111")
        wait_until(lambda: any(code in m["data"] and "payment" in m["data"].lower() for m in env["smtp"].messages), 30,
                   "pretix's mail about the paid order")

        # A partial refund from pretix's back office (its REST API's refund of the payment).
        status, refund = pretix_api("POST", f"/orders/{code}/payments/1/refund/", {"amount": "10.00", "mark_canceled": False})
        self.assertEqual(status, 200, refund)
        refunds = self.wait_orchard(f"/v1/payments/{orchard_payment}/refunds",
                                    lambda a: len(a["refunds"]) == 1 and a["refunds"][0]["state"] == "refunded",
                                    what="Orchard's refund")["refunds"]
        self.assertEqual((refunds[0]["amount"], refunds[0]["currency"]), (1000, "EUR"))
        self.assertTrue(refunds[0]["idempotencyKey"].startswith(f"pretix-refund:{ORGANIZER}:{EVENT}:{code}-R-1:"))
        from pretix.base.models import OrderRefund
        with scopes_disabled():
            done = list(OrderRefund.objects.filter(order__code=code).values_list("state", "amount", "provider"))
        self.assertEqual(done, [("done", Decimal("10.00"), "orchard")])
        # Orchard's payment.refunded comes back and is recognised as pretix's own refund: no second one.
        wait_until(lambda: [d["status"] for d in env["relay"].of_type("payment.refunded", request_id)] == [200], 30,
                   "payment.refunded delivered")
        with scopes_disabled():
            self.assertEqual(OrderRefund.objects.filter(order__code=code).count(), 1)
        status, _ = pretix_api("POST", f"/orders/{code}/payments/1/refund/", {"amount": "20.00"})
        self.assertEqual(status, 400, "pretix refuses more than is left")

        # A second partial refund, then Orchard's sum: 25.00 paid, 15.00 back.
        status, refund = pretix_api("POST", f"/orders/{code}/payments/1/refund/", {"amount": "5.00"})
        self.assertEqual(status, 200, refund)
        answer = self.wait_orchard(f"/v1/payments/{orchard_payment}", lambda a: a["payment"]["amountRefunded"] == 1500,
                                   what="1500 refunded at Orchard")
        self.assertEqual(len(answer["refunds"]), 2)

        # Every delivery Orchard made was verified and accepted.
        self.assertTrue(all(d["status"] == 200 for d in env["relay"].deliveries if not d["dropped"]),
                        [(json.loads(d["body"])["type"], d["status"]) for d in env["relay"].deliveries])

    def test_2_forged_and_replayed_webhooks_change_nothing(self):
        browser = self.browser()
        code, _, _ = self.place_order(browser, email="replay@example.org")
        payment = payment_of(code)
        request_id = payment.info_data["payment_request"]
        fake = json.dumps({
            "id": f"evt_{uuid.uuid4().hex}", "type": "payment.authorized", "created": "2026-11-29T00:00:00Z",
            "merchantIdentifier": MERCHANT,
            "data": {"payment": {"id": "pay_forged", "paymentRequestId": request_id, "state": "authorized",
                                 "amount": 2500, "amountRefunded": 0, "currency": "EUR", "lastFour": "0000",
                                 "processor": "worldpay"},
                     "paymentRequest": {"id": request_id, "reference": code, "metadata": {}}}}).encode()

        # Signed with another secret, or unsigned, or tampered after signing: 400, nothing changes.
        other = "whsec_" + base64.b64encode(b"another secret of at least 24 bytes!").decode()
        self.assertEqual(post_webhook(fake, signed(fake, secret=other))[0], 400)
        self.assertEqual(post_webhook(fake, {"Content-Type": "application/json"})[0], 400)
        tampered = fake.replace(b'"amount": 2500', b'"amount": 2499')
        self.assertEqual(post_webhook(tampered, signed(fake))[0], 400)
        # With the right secret but a timestamp past the 5 minutes' tolerance (a replay): 400.
        old = datetime.now(timezone.utc) - timedelta(minutes=10)
        self.assertEqual(post_webhook(fake, signed(fake, timestamp=old))[0], 400)
        self.assertEqual(payment_of(code).state, "created")
        self.assertEqual(order(code).status, "n")

        # Paid for real (as the shop's app pays, with a minted token), then a real delivery replayed.
        status, paid = mint_and_authorize(request_id, 2500)
        self.assertEqual(status, 200, paid)
        self.wait_paid(code)
        delivery = wait_until(lambda: env["relay"].of_type("payment.authorized", request_id), 30, "the real webhook")[0]
        confirmations = log_actions(code).count("pretix.event.order.payment.confirmed")
        self.assertEqual(confirmations, 1)
        # The same message again (its id recorded): accepted, and nothing happens twice.
        status, body = post_webhook(delivery["body"], delivery["headers"])
        self.assertEqual((status, json.loads(body)["status"]), (200, "seen"))
        # The same message id with another, validly signed body (a refusal): also nothing.
        event = json.loads(delivery["body"])
        event["type"] = "payment.refused"
        event["data"]["payment"]["state"] = "refused"
        replayed = json.dumps(event).encode()
        status, body = post_webhook(replayed, signed(replayed, message_id=event["id"]))
        self.assertEqual((status, json.loads(body)["status"]), (200, "seen"))
        self.assertEqual(payment_of(code).state, "confirmed")
        self.assertEqual(log_actions(code).count("pretix.event.order.payment.confirmed"), 1)
        self.assertEqual(order(code).status, "p")

    def test_3_a_payment_request_for_another_amount_is_refused(self):
        browser = self.browser()
        code, _, _ = self.place_order(browser, email="amount@example.org")
        payment = payment_of(code)
        # A request made at Orchard for this order's payment, but for 1.00 EUR (not the plugin's).
        status, other = orchard("POST", "/v1/payment-requests", {
            "amount": 100, "currency": "EUR", "countryCode": "DE", "reference": code,
            "metadata": {"pretix_event": f"{ORGANIZER}/{EVENT}", "pretix_payment": f"{code}-P-1"}},
            idempotency_key=str(uuid.uuid4()))
        self.assertEqual(status, 201, other)
        status, paid = mint_and_authorize(other["id"], 100)
        self.assertEqual(status, 200, paid)
        # The plugin refuses it: logged, voided at Orchard so the shopper keeps the money, nothing paid.
        wait_until(lambda: "pretix_orchard.refused" in log_actions(code), 30, "the refusal in the order's log")
        self.wait_orchard(f"/v1/payments/{paid['payment']['id']}", lambda a: a["payment"]["state"] == "cancelled",
                          what="the other request's payment voided")
        self.assertIn("pretix_orchard.voided", log_actions(code))
        self.assertEqual(payment_of(code).state, "created")
        self.assertEqual(order(code).status, "n")

        # The plugin's own request, once pretix's payment is for another amount (an order changed
        # after the sheet was shown), is refused too.
        from django_scopes import scopes_disabled
        with scopes_disabled():
            changed = payment_of(code)
            changed.amount = Decimal("24.00")
            changed.save(update_fields=["amount"])
        status, paid = mint_and_authorize(payment.info_data["payment_request"], 2500)
        self.assertEqual(status, 200, paid)
        wait_until(lambda: log_actions(code).count("pretix_orchard.refused") == 2, 30, "the second refusal")
        # Orchard captures the plugin's own requests itself (capture: automatic), usually before the
        # void arrives: the plugin then refunds it in full. Either way the shopper keeps the money.
        self.wait_orchard(f"/v1/payments/{paid['payment']['id']}",
                          lambda a: a["payment"]["state"] == "cancelled" or a["payment"]["amountRefunded"] == 2500,
                          what="the mismatched payment voided or refunded")
        wait_until(lambda: log_actions(code).count("pretix_orchard.voided") == 2, 30, "the second void or refund logged")
        self.assertEqual(log_actions(code).count("pretix_orchard.refused"), 2, "authorized, then settled: refused once")
        self.assertEqual(order(code).status, "n")
        self.assertEqual(payment_of(code).state, "created")

    def test_4_the_reconciliation_confirms_a_payment_whose_webhooks_were_lost(self):
        browser = self.browser()
        code, _, _ = self.place_order(browser, email="lost@example.org")
        request_id = payment_of(code).info_data["payment_request"]
        env["relay"].dropping = True  # pretix down, as far as Orchard can tell
        status, paid = mint_and_authorize(request_id, 2500)
        self.assertEqual(status, 200, paid)
        wait_until(lambda: env["relay"].of_type("payment.authorized", request_id), 30, "Orchard's first attempt")
        self.assertEqual(order(code).status, "n", "no webhook reached pretix")
        # pretix's periodic task (its cron entry point) asks Orchard about the open payment.
        env["pretix"].manage("runperiodic", timeout=300)
        self.assertEqual(order(code).status, "p")
        self.assertEqual(payment_of(code).info_data["orchard_payment"], paid["payment"]["id"])
        # Orchard retries once pretix answers again: the same event changes nothing more.
        env["relay"].dropping = False
        wait_until(lambda: any(d["status"] == 200 for d in env["relay"].of_type("payment.authorized", request_id)), 60,
                   "Orchard's retry, accepted")
        self.assertEqual(log_actions(code).count("pretix.event.order.payment.confirmed"), 1)

    def test_5_google_pay_on_the_same_page_where_orchard_offers_it(self):
        browser = self.browser()
        code, _, _ = self.place_order(browser, email="google@example.org")
        buttons = browser.wait(lambda: [b for b in browser.find_all(GOOGLE_BUTTON) if b.is_displayed()], 30,
                               "Google Pay's button beside Apple Pay's")
        browser.screenshot("pretix-03-both-wallets")
        buttons[0].find_element(By.CSS_SELECTOR, "button").click()
        browser.wait(lambda: browser.find_all(GOOGLE_SHEET) and browser.find(GOOGLE_SHEET).get_attribute("data-state") == "ready",
                     30, "the Google Pay sheet")
        self.assertEqual(browser.find('[data-testid="google-pay-total"]').get_attribute("data-amount"), "25.00")
        browser.find('[data-testid="google-pay-pay"]').click()
        browser.wait(lambda: "We successfully received your payment" in browser.find("body").text, 60,
                     "pretix's paid order page")
        self.assertEqual(order(code).status, "p")


    def test_6_the_back_office_shows_the_payment_captures_it_on_request_and_checks_settings(self):
        from django_scopes import scopes_disabled
        from pretix.base.models import Event
        browser, code, orchard_payment = self.paid_without_capture("backoffice@example.org")
        request_id = payment_of(code).info_data["payment_request"]
        status, answer = orchard("GET", f"/v1/payments/{orchard_payment}")
        self.assertEqual(answer["payment"]["state"], "authorized", "capture: manual leaves it to the organizer")

        # The organizer logs in to pretix's back office and opens the order.
        browser.open(f"{env['nginx'].url}/control/login")
        browser.wait_for('input[name="email"]', 30).send_keys("backoffice@example.org")
        browser.find('input[name="password"]').send_keys("orchard-test-password")
        browser.find('button[type="submit"].btn-primary, form button[type="submit"]').click()
        browser.wait(lambda: "/control/login" not in browser.driver.current_url, 30, "logged in")
        browser.open(f"{env['nginx'].url}/control/event/{ORGANIZER}/{EVENT}/orders/{code}/")
        capture = browser.wait_for('[data-testid="orchard-capture"]', 30)
        body = browser.find("body").text
        self.assertIn(request_id, body)
        self.assertIn(orchard_payment, body)
        browser.screenshot("pretix-04-back-office-payment")
        capture.click()
        browser.wait(lambda: "The payment was captured." in browser.find("body").text, 30, "the capture's message")
        self.wait_orchard(f"/v1/payments/{orchard_payment}", lambda a: a["payment"]["state"] == "settled",
                          what="Orchard's payment captured")
        self.assertTrue(payment_of(code).info_data["captured"])
        self.assertIn("pretix_orchard.captured", log_actions(code))

        # A full refund from the back office's API: the whole payment back at Orchard.
        status, refund = pretix_api("POST", f"/orders/{code}/payments/1/refund/", {"mark_canceled": True})
        self.assertEqual(status, 200, refund)
        self.wait_orchard(f"/v1/payments/{orchard_payment}", lambda a: a["payment"]["amountRefunded"] == 2500,
                          what="everything refunded at Orchard")
        wait_until(lambda: order(code).status == "c", 30, "the order cancelled")

        # The provider's settings page names the webhook URL; saved, it asks Orchard (GET /v1/merchant)
        # which merchant the key is and shows it; it refuses a key Orchard would not issue.
        settings_url = f"{env['nginx'].url}/control/event/{ORGANIZER}/{EVENT}/settings/payment/orchard"
        browser.open(settings_url)
        self.assertIn("/_orchard/webhook/", browser.wait_for(".alert-info", 30).text)
        save = 'form button[type="submit"].btn-save, form button.btn-primary[type="submit"]'
        browser.find(save).click()  # unchanged: the key and secret stay as they are (pretix masks them)
        browser.wait(lambda: "Your changes have been saved." in browser.find("body").text, 30, "the settings saved")
        browser.open(settings_url)  # pretix went back to the list of payment providers
        merchant = browser.wait_for('[data-testid="orchard-merchant"].alert-success', 30).text
        self.assertIn("Orchard Demo Shop", merchant)
        self.assertIn(MERCHANT, merchant)
        self.assertIn("Google Pay", merchant)
        self.assertIn("a test environment", merchant)  # the demo's mock Worldpay: `livemode` false
        browser.screenshot("pretix-05-settings")
        key = browser.find('input[name="payment_orchard_api_key"]')
        key.clear()
        key.send_keys("sk_live_not_an_orchard_key")
        browser.find(save).click()
        browser.wait(lambda: "is not an Orchard secret API key" in browser.find("body").text, 30, "the key refused")
        with scopes_disabled():
            self.assertEqual(Event.objects.get(slug=EVENT).settings.get("payment_orchard_api_key"), env["api_key"])


    def test_6b_an_uncaptured_payment_is_refunded_by_releasing_it(self):
        from django_scopes import scopes_disabled
        browser, code, orchard_payment = self.paid_without_capture("release@example.org")
        # Not captured (capture: manual): pretix's refund of part of it makes Orchard capture only
        # the rest; the plugin captures nothing first, and the refund is done at once.
        status, refund = pretix_api("POST", f"/orders/{code}/payments/1/refund/", {"amount": "10.00", "mark_canceled": False})
        self.assertEqual(status, 200, refund)
        answer = self.wait_orchard(f"/v1/payments/{orchard_payment}", lambda a: a["payment"]["state"] == "settled",
                                   what="the rest captured")
        self.assertEqual((answer["payment"]["amountCaptured"], answer["payment"]["amountRefunded"]), (1500, 1000))
        self.assertEqual([(r["amount"], r.get("released")) for r in answer["refunds"]], [(1000, True)])
        self.assertNotIn("pretix_orchard.captured", log_actions(code))
        from pretix.base.models import OrderRefund

        def done():
            with scopes_disabled():
                return payment_of(code).refunds.filter(state=OrderRefund.REFUND_STATE_DONE).count() == 1
        wait_until(done, 30, "pretix's refund done")

    def test_7_a_payment_the_processor_left_unknown_is_pending_then_confirmed(self):
        browser = self.browser()
        code, _, _ = self.place_order(browser, email="unknown@example.org", event=UNKNOWN_EVENT)
        request_id = payment_of(code).info_data["payment_request"]
        # The second Orchard's mock Worldpay takes the payment and drops the connection: no answer.
        status, answer = mint_and_authorize(request_id, 2500, demo="demo2", api_key="api_key2")
        self.assertEqual((status, answer["error"]["code"]), (504, "payment_unknown"), answer)
        # Orchard says so (payment.unknown: pretix's payment pending, the shopper cannot switch
        # methods), then its reconciler asks the processor and reports the authorization.
        wait_until(lambda: "pretix_orchard.pending" in log_actions(code), 30, "the payment pending in pretix")
        self.wait_paid(code, timeout=90)
        relay2 = env["relay2"]
        # (The relay records a delivery once pretix has answered it, after pretix has committed.)
        wait_until(lambda: relay2.of_type("payment.authorized", request_id), 30, "payment.authorized recorded")
        self.assertEqual([d["status"] for d in relay2.of_type("payment.unknown", request_id)], [200])
        self.assertEqual([d["status"] for d in relay2.of_type("payment.authorized", request_id)], [200])
        self.assertEqual(env["relay"].of_type("payment.unknown", request_id), [], "the other merchant's URL got nothing")
        self.assertEqual(log_actions(code).count("pretix.event.order.payment.confirmed"), 1)

    def test_8_an_expired_request_cancels_the_payment_and_the_page_offers_another(self):
        browser = self.browser()
        code, _, page = self.place_order(browser, email="quick@example.org", event=QUICK_EVENT)
        request_id = payment_of(code).info_data["payment_request"]
        status, request = orchard("GET", f"/v1/payment-requests/{request_id}")
        remaining = datetime.fromisoformat(request["expiresAt"].replace("Z", "+00:00")) - datetime.now(timezone.utc)
        self.assertLessEqual(remaining.total_seconds(), 61, "the request lasts the order's one-minute payment term")
        # Orchard expires it (every 15 s once it is past) and says so; pretix cancels the payment.
        wait_until(lambda: payment_of(code).state == "canceled", 120, "the pretix payment cancelled", interval=0.5)
        expired = wait_until(lambda: env["relay"].of_type("payment_request.expired", request_id), 30, "the expiry recorded")
        self.assertEqual([d["status"] for d in expired], [200])
        self.assertIn("pretix_orchard.expired", log_actions(code))
        browser.open(page)
        browser.wait(lambda: "Pay now" in browser.find("body").text, 30, "pretix's offer to pay again")

    def test_9_an_organizer_extending_the_payment_term_extends_the_request(self):
        from django_scopes import scopes_disabled
        from pretix.base.models import Order
        from pretix_orchard.models import OrchardPaymentRequest
        browser = self.browser()
        code, _, _ = self.place_order(browser, email="later@example.org")
        request_id = payment_of(code).info_data["payment_request"]
        _, before = orchard("GET", f"/v1/payment-requests/{request_id}")
        first = datetime.fromisoformat(before["expiresAt"].replace("Z", "+00:00"))
        # The organizer gives the customer 25 days from now (pretix's "extend payment term" sets
        # the order's expiry); the periodic task asks about requests open for 10 minutes or more.
        later = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=25)
        self.assertGreater(later - first, timedelta(days=1), "the new term is later than the request's")
        with scopes_disabled():
            Order.objects.filter(code=code).update(expires=later)
            OrchardPaymentRequest.objects.filter(payment_request_id=request_id).update(
                created=datetime.now(timezone.utc) - timedelta(minutes=11))
        env["pretix"].manage("runperiodic", timeout=300)
        _, after = orchard("GET", f"/v1/payment-requests/{request_id}")
        extended = datetime.fromisoformat(after["expiresAt"].replace("Z", "+00:00"))
        self.assertLessEqual(abs((extended - later).total_seconds()), 120, after["expiresAt"])
        self.assertEqual(after["status"], "requires_payment")
        self.assertIn("pretix_orchard.extended", log_actions(code))
        self.assertEqual(payment_of(code).info_data["expires_at"], after["expiresAt"])
        # Asked again, nothing more happens: the request is as long as the term.
        with scopes_disabled():
            OrchardPaymentRequest.objects.filter(payment_request_id=request_id).update(last_checked=None)
        env["pretix"].manage("runperiodic", timeout=300)
        self.assertEqual(log_actions(code).count("pretix_orchard.extended"), 1)

    def test_9b_a_declined_card_fails_the_payment_and_another_card_pays_the_same_request(self):
        browser = self.browser()
        code, _, _ = self.place_order(browser, email="declined@example.org")
        request_id = payment_of(code).info_data["payment_request"]
        queue_processor_answers("demo", ["decline"])  # the issuer says no to the next card
        status, refused = mint_and_authorize(request_id, 2500)
        self.assertEqual((status, refused["error"]["code"]), (402, "payment_failed"), refused)
        wait_until(lambda: payment_of(code).state == "failed", 30, "the pretix payment failed by payment.refused")
        self.assertEqual(payment_of(code).info_data["refusal"]["state"], "refused")
        self.assertEqual(order(code).status, "n", "the order still waits for its money")
        # The request stays payable: the shopper's next card pays it, and the same pretix payment is confirmed.
        status, paid = mint_and_authorize(request_id, 2500)
        self.assertEqual(status, 200, paid)
        self.wait_paid(code)
        self.assertEqual(payment_of(code).state, "confirmed")
        self.assertNotIn("refusal", payment_of(code).info_data)
        self.assertEqual(log_actions(code).count("pretix.event.order.payment.confirmed"), 1)

    def test_9c_the_event_feed_catches_up_on_webhooks_pretix_missed(self):
        from django_scopes import scopes_disabled
        from pretix_orchard.feed import catch_up
        from pretix_orchard.models import OrchardEventCursor, OrchardWebhookMessage
        browser = self.browser()
        code, _, _ = self.place_order(browser, email="missed@example.org")
        request_id = payment_of(code).info_data["payment_request"]
        env["relay"].dropping = True  # pretix unreachable for Orchard
        status, paid = mint_and_authorize(request_id, 2500)
        self.assertEqual(status, 200, paid)
        missed = wait_until(lambda: env["relay"].of_type("payment.authorized", request_id), 30, "Orchard's first attempt")
        event_id = json.loads(missed[0]["body"])["id"]
        self.assertEqual(order(code).status, "n", "no webhook reached pretix")
        # The periodic task's first step, alone (not the per-request reconciliation): Orchard's feed.
        with scopes_disabled():
            acted = catch_up()
            self.assertGreaterEqual(acted, 1)
            self.assertTrue(OrchardWebhookMessage.objects.filter(message_id=event_id).exists())
            cursors = list(OrchardEventCursor.objects.exclude(cursor="").values_list("cursor", flat=True))
        self.assertEqual(order(code).status, "p", "confirmed from the feed")
        self.assertTrue(cursors, "the feed's place is kept")
        with scopes_disabled():
            catch_up()  # read again from the cursor: nothing acts twice
        self.assertEqual(log_actions(code).count("pretix.event.order.payment.confirmed"), 1)
        # Orchard's retry reaches pretix once it answers again: already seen, nothing more happens.
        env["relay"].dropping = False
        retried = wait_until(lambda: [d for d in env["relay"].of_type("payment.authorized", request_id)
                                      if d["status"] == 200], 90, "Orchard's retry, accepted")
        self.assertEqual(json.loads(retried[0]["body"])["id"], event_id)
        self.assertEqual(log_actions(code).count("pretix.event.order.payment.confirmed"), 1)


class SettingsTests(PretixOrchardCase):
    def test_settings_are_checked_when_saved(self):
        from django.core.exceptions import ValidationError
        from django_scopes import scopes_disabled
        from pretix.base.models import Event
        from pretix_orchard.payment import OrchardProvider

        with scopes_disabled():
            provider = OrchardProvider(Event.objects.get(slug=EVENT))
        good = {"payment_orchard_api_url": env["demo"].url + "/", "payment_orchard_api_key": env["api_key"],
                "payment_orchard_webhook_secret": env["webhook_secret"], "payment_orchard_button_module": "/orchard/orchard.js"}
        self.assertEqual(provider.settings_form_clean(dict(good))["payment_orchard_api_url"], env["demo"].url)
        # Orchard named the key's merchant (GET /v1/merchant), and the settings keep it for this key.
        merchant = provider.merchant()
        self.assertEqual((merchant["merchantIdentifier"], merchant["displayName"], merchant["processor"]),
                         (MERCHANT, "Orchard Demo Shop", "worldpay"))
        self.assertEqual(merchant["currencies"]["EUR"], 2)
        self.assertIn("googlePay", merchant["wallets"])
        self.assertIsNone(provider.currency_refusal())
        # A webhook for a payment request the plugin does not know is verified against the secrets of
        # the settings Orchard named as its Orchard-Merchant header's, where any are; else all.
        from pretix_orchard.views import configured_secrets
        with scopes_disabled():
            named, everything = configured_secrets(MERCHANT), configured_secrets()
            self.assertEqual(configured_secrets("merchant.example.unknown"), everything)
        self.assertIn(env["webhook_secret"], named)
        self.assertIn(env["webhook_secret2"], everything)
        cases = {
            "payment_orchard_api_url": ["http://orchard.example:8080", "ftp://127.0.0.1", "https://user:pw@orchard.example"],
            "payment_orchard_api_key": ["sk_live_123", "osk_key_0123456789abcdef_short"],
            "payment_orchard_webhook_secret": ["whsec_c2hvcnQ=", "too-short"],
            "payment_orchard_button_module": ["https://cdn.example/orchard.js", "orchard.js"],
        }
        for field, values in cases.items():
            for value in values:
                with self.subTest(field=field, value=value), self.assertRaises(ValidationError) as refused:
                    provider.settings_form_clean({**good, field: value})
                self.assertIn(field, refused.exception.message_dict)
        # A key of the right shape that Orchard does not know: Orchard's 401.
        unknown = "osk_key_0123456789abcdef_" + "A" * 43
        with self.assertRaises(ValidationError) as refused:
            provider.settings_form_clean({**good, "payment_orchard_api_key": unknown})
        self.assertIn("401", str(refused.exception.message_dict["payment_orchard_api_key"]))
        # The second Orchard's key on the first Orchard's address: another merchant's key there, refused.
        with self.assertRaises(ValidationError) as refused:
            provider.settings_form_clean({**good, "payment_orchard_api_key": env["api_key2"]})
        self.assertIn("401", str(refused.exception.message_dict["payment_orchard_api_key"]))
        # An Orchard on loopback that pretix.cfg does not name (pretix guards against such requests).
        from pretix_harness import free_port as closed
        with self.assertRaises(ValidationError) as refused:
            provider.settings_form_clean({**good, "payment_orchard_api_url": f"http://127.0.0.1:{closed()}"})
        self.assertIn("pretix.cfg", str(refused.exception.message_dict["payment_orchard_api_url"]))
        # And one pretix.cfg names that does not answer.
        from unittest import mock
        silent = f"http://127.0.0.1:{closed()}"
        with mock.patch("pretix_orchard.payment.operator_urls", return_value=[silent]), \
                self.assertRaises(ValidationError) as refused:
            provider.settings_form_clean({**good, "payment_orchard_api_url": silent})
        self.assertIn("could not be asked", str(refused.exception.message_dict["payment_orchard_api_url"]))

    def test_a_currency_orchard_does_not_take_as_pretix_counts_it_is_refused(self):
        from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
        from django_scopes import scopes_disabled
        from pretix.base.models import Event
        from pretix_orchard.payment import OrchardProvider

        good = {"payment_orchard_api_url": env["demo"].url, "payment_orchard_api_key": env["api_key"],
                "payment_orchard_webhook_secret": env["webhook_secret"], "payment_orchard_button_module": "/orchard/orchard.js"}
        with scopes_disabled():
            OrchardProvider(Event.objects.get(slug=EVENT)).settings_form_clean(dict(good))  # Orchard's answer kept
            for currency, problem in [("KWD", "10^-3"), ("XOF", "does not take XOF")]:
                # The same event in another currency (not saved): KWD has 3 decimals at Orchard (ISO 4217)
                # and 2 in pretix; Orchard does not list XOF.
                event = Event.objects.get(slug=EVENT)
                event.currency = currency
                provider = OrchardProvider(event)
                with self.subTest(currency=currency):
                    with self.assertRaises(ValidationError) as refused:
                        provider.settings_form_clean(dict(good))
                    self.assertIn(problem, str(refused.exception.message_dict[NON_FIELD_ERRORS]))
                    # Checkout does not offer it either (from the answer kept, without asking Orchard).
                    self.assertIn(problem, provider.currency_refusal())
                    self.assertFalse(provider.usable())
            self.assertTrue(OrchardProvider(Event.objects.get(slug=EVENT)).usable())


class WithdrawalTests(PretixOrchardCase):
    def start_over(self, browser, page):
        """The shopper's "Re-try payment or choose another payment method" on the order's page, Apple Pay
        again: pretix cancels the open payment and makes another, for which the plugin makes a request."""
        browser.open(page)
        browser.wait_for('a[href*="/pay/change"]', 30).click()
        browser.wait(lambda: browser.find_all('input[name="payment"][value="orchard"]'), 30, "the payment methods")
        browser.driver.execute_script("arguments[0].click();", browser.find('input[name="payment"][value="orchard"]'))
        browser.find('.checkout-button-row button[type="submit"], button.btn-primary[type="submit"]').click()
        browser.wait(lambda: "/confirm" in browser.driver.current_url, 30, "the payment's confirmation step")
        browser.find('.checkout-button-row button[type="submit"], button.btn-primary[type="submit"]').click()
        browser.wait(lambda: "/confirm" not in browser.driver.current_url and browser.find_all(BUTTON), 60,
                     "the order's page with the new request's button")

    def cancelled_at_orchard(self, request_id):
        return self.wait_orchard(f"/v1/payment-requests/{request_id}", lambda a: a["status"] == "cancelled",
                                 what=f"payment request {request_id} cancelled at Orchard")

    def test_1_a_payment_cancelled_before_it_was_paid_withdraws_its_request(self):
        from django_scopes import scopes_disabled
        stale = self.browser()  # the shopper's first tab, left open on the order's page
        code, _, page = self.place_order(stale, email="withdraw@example.org")
        first = payment_of(code).info_data["payment_request"]
        stale.wait_button_enabled(30)

        # The shopper starts over in another tab: pretix cancels P-1, whose request is withdrawn.
        browser = self.browser()
        self.start_over(browser, page)
        second = payment_of(code, 2).info_data["payment_request"]
        self.assertNotEqual(first, second)
        request = self.cancelled_at_orchard(first)
        self.assertEqual(request["payments"], [])
        self.assertEqual(payment_of(code).state, "canceled")
        self.assertEqual(payment_of(code, 2).state, "created")
        self.assertIn("pretix_orchard.withdrawn", log_actions(code))
        # Orchard says so by webhook, which pretix accepts and which changes nothing more.
        delivered = wait_until(lambda: env["relay"].of_type("payment_request.cancelled", first), 30,
                               "payment_request.cancelled delivered")
        self.assertEqual([d["status"] for d in delivered], [200])
        self.assertEqual(json.loads(delivered[0]["body"])["data"]["paymentRequest"]["metadata"]["pretix_payment"],
                         f"{code}-P-1")
        self.assertEqual(log_actions(code).count("pretix_orchard.expired"), 0, "already cancelled by pretix")

        # The first tab's button can no longer pay it: the sheet's payment is refused, nothing is charged.
        stale.wait_button_enabled(30).click()
        root = '[data-orchard-pay]'
        stale.wait(lambda: stale.sheet_state() == "ready" or stale.find(root).get_attribute("data-apple-outcome"), 30,
                   "the sheet, or the button's outcome")
        if stale.sheet_state() == "ready":
            stale.find('[data-testid="sheet-pay"]').click()
        stale.wait(lambda: stale.find(root).get_attribute("data-apple-outcome"), 30, "the stale page's outcome")
        self.assertNotEqual(stale.find(root).get_attribute("data-apple-outcome"), "success")
        stale.screenshot("pretix-06-withdrawn-request-refused")
        status, answer = mint_and_authorize(first, 2500)
        self.assertEqual((status, answer["error"]["code"]), (409, "order_not_open"), answer)
        status, request = orchard("GET", f"/v1/payment-requests/{first}")
        self.assertEqual((request["status"], request["payments"]), ("cancelled", []))
        self.assertEqual(order(code).status, "n")

        # Withdrawn at Orchard directly (another tool with the merchant's key): Orchard's webhook
        # cancels the pretix payment, and the order's page offers to pay again.
        status, answer = orchard("POST", f"/v1/payment-requests/{second}/cancel")
        self.assertEqual((status, answer["status"]), (200, "cancelled"), answer)
        wait_until(lambda: payment_of(code, 2).state == "canceled", 30, "P-2 cancelled by the webhook")
        self.assertIn("pretix_orchard.expired", log_actions(code))
        browser.open(page)
        browser.wait(lambda: "Pay now" in browser.find("body").text, 30, "pretix's offer to pay again")

        # Paying again makes P-3; the organizer cancels the order (pretix's REST API): its request is
        # withdrawn as well.
        browser.find('a[href*="/pay/change"]').click()
        browser.wait(lambda: browser.find_all('input[name="payment"][value="orchard"]'), 30, "the payment methods")
        browser.driver.execute_script("arguments[0].click();", browser.find('input[name="payment"][value="orchard"]'))
        browser.find('.checkout-button-row button[type="submit"], button.btn-primary[type="submit"]').click()
        browser.wait(lambda: "/confirm" in browser.driver.current_url, 30, "the payment's confirmation step")
        browser.find('.checkout-button-row button[type="submit"], button.btn-primary[type="submit"]').click()
        third = wait_until(lambda: payment_of(code, 3).info_data.get("payment_request"), 60, "P-3's request")
        status, cancelled = pretix_api("POST", f"/orders/{code}/mark_canceled/", {"send_email": False})
        self.assertEqual(status, 200, cancelled)
        self.cancelled_at_orchard(third)
        self.assertEqual(payment_of(code, 3).state, "canceled")
        self.assertEqual(order(code).status, "c")
        with scopes_disabled():
            self.assertEqual([p.state for p in order(code).payments.order_by("local_id")], ["canceled"] * 3)
        delivered = wait_until(lambda: env["relay"].of_type("payment_request.cancelled", third), 30,
                               "payment_request.cancelled of P-3's request delivered")
        self.assertEqual([d["status"] for d in delivered], [200])
        self.assertEqual(log_actions(code).count("pretix_orchard.withdrawn"), 2)

    def test_2_a_cancel_while_the_payment_is_at_the_processor_is_left_to_the_webhook(self):
        browser = self.browser()
        code, _, _ = self.place_order(browser, email="held@example.org", event=HELD_EVENT)
        request_id = payment_of(code).info_data["payment_request"]
        # The order's 20 days to pay are the request's too (Orchard takes up to 30).
        status, request = orchard_held("GET", f"/v1/payment-requests/{request_id}")
        expires = datetime.fromisoformat(request["expiresAt"].replace("Z", "+00:00"))
        self.assertLess(abs((expires - order(code).expires).total_seconds()), 2, (request["expiresAt"], order(code).expires))
        self.assertGreater(expires - datetime.now(timezone.utc), timedelta(days=19))
        relay = env["held"].relay
        relay.hold()
        self.addCleanup(relay.release)
        held_before = relay.held
        answers = []
        paying = threading.Thread(target=lambda: answers.append(
            mint_and_authorize(request_id, 2500, api_key="api_key_held", url=env["held"].url)), daemon=True)
        paying.start()
        self.addCleanup(paying.join, 60)
        # Orchard has sent the authorization to the processor, whose answer the relay holds.
        wait_until(lambda: relay.held > held_before, 30, "Orchard's authorization at the processor")
        status, request = orchard_held("GET", f"/v1/payment-requests/{request_id}")
        self.assertEqual(request["status"], "processing", request)

        # The organizer cancels the pretix payment meanwhile: Orchard will not withdraw the request,
        # so pretix keeps its payment as it is.
        status, answer = pretix_api("POST", f"/orders/{code}/payments/1/cancel/", event=HELD_EVENT)
        self.assertEqual(status, 400, answer)
        self.assertIn("processor", answer["detail"])
        self.assertEqual(payment_of(code).state, "created")
        status, request = orchard_held("GET", f"/v1/payment-requests/{request_id}")
        self.assertEqual(request["status"], "processing", request)

        # The processor answers: authorized, and Orchard's webhook confirms the pretix payment.
        relay.release()
        paying.join(60)
        self.assertEqual(answers[0][0], 200, answers)
        self.wait_paid(code)
        self.assertEqual(payment_of(code).state, "confirmed")
        delivered = wait_until(lambda: env["relay"].of_type("payment.authorized", request_id), 30, "payment.authorized")
        self.assertEqual([d["status"] for d in delivered], [200])
        status, request = orchard_held("GET", f"/v1/payment-requests/{request_id}")
        self.assertEqual(request["status"], "paid")
        self.assertEqual(env["relay"].of_type("payment_request.cancelled", request_id), [])

        # A payment_request.cancelled for a confirmed payment (signed as Orchard signs) never un-confirms it.
        event = {"id": f"evt_{uuid.uuid4().hex}", "type": "payment_request.cancelled", "created": "2026-11-29T00:00:00Z",
                 "merchantIdentifier": MERCHANT,
                 "data": {"paymentRequest": {"id": request_id, "reference": code, "metadata": {}}}}
        body = json.dumps(event).encode()
        status, answer = post_webhook(body, signed(body))
        self.assertEqual((status, json.loads(answer)["status"]), (200, "ok"))
        self.assertEqual(payment_of(code).state, "confirmed")
        self.assertEqual(order(code).status, "p")


if __name__ == "__main__":
    unittest.main(verbosity=2)
