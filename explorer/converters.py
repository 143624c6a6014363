"""Path converters of the URL conf.

`<id:...>` is a row's id: digits that fit a 64-bit signed integer, the widest id column the
databases hold (BigAutoField). A longer number is no id of any row, so its address matches no
route and answers the site's 404, as an unknown id does; Django's `<int:...>` would hand it to
the view, whose query then fails (SQLite cannot bind an integer past 64 bits: OverflowError,
a 500).
"""

LARGEST_ID = 2**63 - 1


class RowIdConverter:
    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > LARGEST_ID:
            raise ValueError(f"{value} is past the largest id")   # the route does not match
        return number

    def to_url(self, value: int) -> str:
        return str(value)
