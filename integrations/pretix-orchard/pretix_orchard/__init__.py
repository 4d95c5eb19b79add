"""pretix-orchard: Apple Pay (and Google Pay) in pretix through Orchard's payments API."""

__version__ = "0.1.0"
