"""Transfers: funding, withdrawals and their fees, internal transfers."""
