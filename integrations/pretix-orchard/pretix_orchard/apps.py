from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _

from . import __version__


class PluginApp(AppConfig):
    name = "pretix_orchard"
    verbose_name = "Orchard (Apple Pay, Google Pay)"
    default = True

    class PretixPluginMeta:
        name = _("Apple Pay through Orchard")
        author = "Orchard contributors"
        description = _(
            "Take Apple Pay (and Google Pay, where your Orchard offers it) through Orchard, a "
            "self-hosted wallet-payments server: the button on the order's page, the payment "
            "confirmed only by Orchard's signed webhook, refunds and captures from pretix."
        )
        visible = True
        category = "PAYMENT"
        version = __version__
        compatibility = "pretix>=2026.8.0"
        settings_links = [
            ((_("Payment"), _("Apple Pay through Orchard")), "control:event.settings.payment.provider", {"provider": "orchard"}),
        ]

    def ready(self):
        from . import signals  # noqa: F401
