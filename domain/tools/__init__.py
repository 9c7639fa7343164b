"""Tool modules by product area. Each module ends with its ``TOOLS``; :mod:`domain.catalog` lists
the modules. Tool modules import the store, the core and :mod:`domain.tools.args` /
:mod:`domain.tools.views` — never another tool module."""
