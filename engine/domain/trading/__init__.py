"""Trading: orders, the book, matching, markets."""
