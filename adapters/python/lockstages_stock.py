"""The stock a holder sells from: harness/src/workload.rs's `Database`, in
Python, so that a sale by a Python holder is the same commands on the
database node as a sale by a Rust one (the judge reads the stock and the
orders, whoever wrote them).

A sale reads the stock, and writes back one less with an order. Stage 8's
fencing tokens and the request ids of an idempotent resource are checked by
the resource itself, in the Rust side's own Lua scripts; a holder
whose library has no token reads and writes plainly, as a Rust stage without
one does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

# lockcore's default key; the stock's keys sit beside the lock's (see `Stock`).
DEFAULT_LOCK_KEY = "lock:stock"


class SaleError(Exception):
    """The resource answered something a sale cannot mean."""


# The resource's three scripts are the Rust side's own files
# (harness/src/workload/*.lua, which workload.rs includes), read from the
# checkout: a sale by a Python holder and a sale by a Rust one are the same
# commands on the database, and there is one copy of each to keep right.
_SCRIPTS = Path(__file__).resolve().parents[2] / "harness" / "src" / "workload"


def _script(name: str) -> str:
    return (_SCRIPTS / name).read_text(encoding="utf-8")


FENCED_READ = _script("fenced_read.lua")
FENCED_SALE = _script("fenced_sale.lua")
IDEMPOTENT_SALE = _script("idempotent_sale.lua")


class Stock:
    """The database node as one client sees it (workload.rs's `Database`).

    The keys sit beside the lock's: with the lock at `<prefix>lock:stock`,
    the stock is `<prefix>stock`, the orders `<prefix>orders`, and so on.
    """

    def __init__(self, db, lock_key: str, name: str, fencing: str, request_ids: bool):
        """`db`: a redis-py client of the database node, named `name`."""
        prefix = lock_key[: -len(DEFAULT_LOCK_KEY)] if lock_key.endswith(DEFAULT_LOCK_KEY) else ""
        self.stock = prefix + "stock"
        self.orders = prefix + "orders"
        self.fence = prefix + "stock:fence"
        self.requests = prefix + "orders:requests"
        self.duplicates = prefix + "orders:duplicates"
        self.name = name
        self.fencing = fencing
        self.request_ids = request_ids
        self.purchases = 0
        self.db = db

    def read(self, token: Optional[int]) -> int:
        """`GET stock`; with a token and a resource that fences reads, the
        read registers the token as the highest seen."""
        if token is not None and self.fencing == "reads-and-writes":
            return int(self.db.eval(FENCED_READ, 2, self.stock, self.fence, token))
        stock = self.db.get(self.stock)
        return int(stock) if stock is not None else 0

    def sell(self, read: int, token: Optional[int]) -> str:
        """Writes back `read - 1` and an order; the answer's words."""
        # A checking resource gets a request id of this client's own with
        # every purchase (`client-A#1`): a new request, never a retry.
        request = None
        if self.request_ids:
            self.purchases += 1
            request = f"{self.name}#{self.purchases}"
        if read <= 0:
            return "sold-out"
        if self.fencing == "none":
            token = None  # an unchecking resource writes as if none were shown
        entry = f"{self.name} {request}" if request else self.name
        if request is not None:
            answer = int(
                self.db.eval(
                    IDEMPOTENT_SALE, 5,
                    self.stock, self.orders, self.fence, self.requests, self.duplicates,
                    read - 1, entry, "" if token is None else token, request,
                )
            )
            if answer == 1:
                return f"sold {read}"
            if answer == 2:
                return "duplicate"
            if token is not None:
                return f"rejected {token}"
            raise SaleError(
                f"the idempotent sale answered {answer} to a purchase without a token"
            )
        if token is None:
            pipe = self.db.pipeline(transaction=False)
            pipe.set(self.stock, read - 1)
            pipe.rpush(self.orders, entry)
            pipe.execute()
            return f"sold {read}"
        accepted = self.db.eval(
            FENCED_SALE, 3, self.stock, self.orders, self.fence, read - 1, entry, token
        )
        return f"sold {read}" if int(accepted) == 1 else f"rejected {token}"
