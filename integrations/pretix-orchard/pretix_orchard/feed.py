"""Catching up on Orchard's events (`GET /v1/events`) pretix did not receive as webhooks: pretix
down longer than Orchard's retries, a proxy refusing them, a secret mistyped for a while. The
periodic task reads each Orchard key's feed from where it stopped and acts on every event about a
payment of this pretix once, as a webhook would have (the same message IDs: an event delivered both
ways acts once). The feed is Orchard's own answer to the secret key over its API, so no signature
is checked; its order never changes behind a reader, so a kept cursor misses nothing."""

import logging

from pretix.base.models import Event

from .client import OrchardError
from .events import act_once, payment_of
from .models import OrchardEventCursor
from .payment import key_fingerprint

logger = logging.getLogger(__name__)


def feeds():
    """Each Orchard address and key an event with the plugin enabled uses, once: `{fingerprint: provider}`."""
    found = {}
    for event in Event.objects.filter(plugins__contains="pretix_orchard").select_related("organizer"):
        provider = event.get_payment_providers().get("orchard")
        if provider is None or not provider.settings.get("_enabled", as_type=bool):
            continue
        url, api_key = provider.settings.get("api_url"), provider.settings.get("api_key")
        if url and api_key:
            found.setdefault(key_fingerprint(url, api_key), provider)
    return found


def fingerprint_of(provider):
    return key_fingerprint(provider.settings.get("api_url"), provider.settings.get("api_key"))


def catch_up(pages=10, limit=100):
    """Reads up to `pages` pages of each feed; how many events it acted on."""
    acted = 0
    for fingerprint, provider in feeds().items():
        try:
            acted += read_feed(fingerprint, provider, pages, limit)
        except OrchardError as error:
            logger.warning("Orchard's event feed could not be read (%s): %s", provider.settings.get("api_url"), error)
    return acted


def read_feed(fingerprint, provider, pages, limit):
    cursor, _ = OrchardEventCursor.objects.get_or_create(key=fingerprint)
    client = provider.client(timeout=10)
    acted = 0
    for _ in range(pages):
        try:
            page = client.events(after=cursor.cursor or None, limit=limit)
        except OrchardError as error:
            if error.status != 404 or not cursor.cursor:
                raise
            # The event the cursor names was purged (Orchard keeps delivered events 30 days):
            # start again from the oldest kept; acting is once per event ID, so nothing doubles.
            logger.warning("Orchard no longer holds event %s; reading its feed from the oldest event", cursor.cursor)
            cursor.cursor = ""
            cursor.save(update_fields=["cursor", "updated"])
            continue
        events = page.get("events")
        if not isinstance(events, list) or not all(isinstance(event, dict) for event in events):
            raise OrchardError(200, "unreadable", "GET /v1/events: the page is not a list of event objects")
        for event in events:
            payment = payment_of(event)
            owner = payment.payment_provider if payment is not None else None
            # Only a payment whose event uses this Orchard and key: another key's events are its own feed's.
            if owner is not None and fingerprint_of(owner) == fingerprint and act_once(event, payment, owner):
                acted += 1
        following = page.get("next")
        if not isinstance(following, str) or not following:
            break
        cursor.cursor = str(following)[:190]
        cursor.save(update_fields=["cursor", "updated"])
    return acted
