"""The plugin tests use pytest's ``pytester``.

``pytest_plugins = ["pytester"]`` is refused in a conftest below the rootdir,
so the plugin is registered here when this conftest is loaded (its options
get their defaults because pytest_addoption is a historic hook).
"""


def pytest_configure(config):
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")
