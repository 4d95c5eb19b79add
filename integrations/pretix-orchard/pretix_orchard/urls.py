from django.urls import path, re_path

from .views import capture_view, status, webhook

# The webhook URL to register as the merchant's webhook.url in Orchard: one for every event.
urlpatterns = [
    path("_orchard/webhook/", webhook, name="webhook"),
    re_path(r"^control/event/(?P<organizer>[^/]+)/(?P<event>[^/]+)/orchard/capture/(?P<code>[^/]+)/(?P<payment>[0-9]+)/$",
            capture_view, name="capture"),
]

event_patterns = [
    re_path(r"^orchard/status/(?P<order>[^/]+)/(?P<secret>[A-Za-z0-9]+)/(?P<payment>[0-9]+)/$", status, name="status"),
]
