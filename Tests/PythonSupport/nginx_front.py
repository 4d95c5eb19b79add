"""The nginx configuration the tests put in front of a site and Orchard: `/` to the site's upstream, Orchard under
`/orchard/` through the snippet Orchard ships (Config/nginx/orchard-locations.conf, included unchanged), every file
in one temporary prefix. Shared by the example shop (Tests/Browser) and pretix (Tests/Pretix)."""

import os
from pathlib import Path

SNIPPET = Path(__file__).resolve().parents[2] / "Config" / "nginx" / "orchard-locations.conf"


def write_config(prefix, port, orchard_port, site_name, site_port, site_location):
    """Writes `prefix/nginx.conf`: nginx on 127.0.0.1:`port`, upstream `orchard` and `site_name`, and
    `site_location` (the body of `location /`) proxying to the site. Returns the file's path."""
    user = "user root;\n" if os.geteuid() == 0 else ""
    path = Path(prefix) / "nginx.conf"
    path.write_text(f"""{user}worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    upstream orchard {{ server 127.0.0.1:{orchard_port}; keepalive 16; }}
    upstream {site_name} {{ server 127.0.0.1:{site_port}; }}
    server {{
        listen 127.0.0.1:{port};
        server_name localhost;
        include {SNIPPET};
        location / {{ {site_location} }}
    }}
}}
""")
    return path
