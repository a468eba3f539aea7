"""The pure core: the verdict vocabulary and every step that needs no I/O, no model, no framework.

``schema`` (models, labels, reasons), ``extract`` (answer -> claims and citations), ``interpret``
(a fetched page -> usable text or a decided verdict), ``passages``, ``quote_guard``, ``aggregate``
(the fixed label rule) and ``policy`` (keep / annotate / strip / block). Modules here import each
other and pure-Python libraries (pydantic, markdown parsing, sentence splitting) only: never the
fetchers, the models, the stores or the apps.
"""
