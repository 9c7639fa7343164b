"""The search component: text processing, the query language, the index backends."""
