"""``h5lake serve``: the HSDS REST API over a store directory, so that h5pyd
and the HSDS command-line tools work against h5lake stores."""

import json
import os

from .. import _core


def serve(root, *, host="127.0.0.1", port=5101, password_file=None, allow_noauth=False,
          on_ready=None, link_roots=(), link_buckets=(), **limits):
    """Serve the store directory ``root`` (the HSDS bucket: domain
    ``/home/u/f.h5`` is ``root/home/u/f.h5``) until Ctrl-C.

    Requests authenticate with HTTP Basic against ``password_file`` (HSDS's
    ``user:password`` lines); ``allow_noauth=True`` lets requests without
    credentials act as the ``default`` ACL user. ``on_ready(url)`` is called
    once the server listens. Raises ``KeyboardInterrupt`` when stopped by
    Ctrl-C, ``OSError`` if the port cannot be bound.

    Linked datasets may name files only below ``link_roots`` (directories)
    and objects only below ``link_buckets`` (``s3://bucket[/prefix]``); by
    default the server opens no file or URL a client names. ``limits`` are
    the server's resource bounds, by the names ``h5lake serve --help`` lists
    (``memory_budget_bytes``, ``max_json_elements``, ``header_timeout``, …;
    sizes in bytes, times in seconds).
    """
    options = dict(limits)
    options["link_roots"] = [os.fspath(r) for r in link_roots]
    options["link_buckets"] = [str(b) for b in link_buckets]
    _core.serve(os.fspath(root), host, int(port),
                None if password_file is None else os.fspath(password_file),
                bool(allow_noauth), on_ready, json.dumps(options))
