"""`python manage.py unlock_address ADDRESS...`: lift every lock of a client address: its
log-in locks (axes' attempts from it, whatever the usernames) and its sign-up and
password-reset limits (explorer/throttle.py). For a username's log-in locks from every address,
axes' own `manage.py axes_reset_username NAME` (lower-cased)."""
import ipaddress

from axes.handlers.proxy import AxesProxyHandler
from django.core.management.base import BaseCommand, CommandError

from explorer.throttle import ADDRESS_LIMITS


class Command(BaseCommand):
    help = "Lift the log-in locks and the sign-up and password-reset limits of addresses."

    def add_arguments(self, parser):
        parser.add_argument("addresses", nargs="+", metavar="ADDRESS",
                            help="a client address as the throttles see it (IPv4 or IPv6)")

    def handle(self, *args, addresses: list[str], **options):
        for address in addresses:
            try:
                address = str(ipaddress.ip_address(address.strip()))
            except ValueError:
                raise CommandError(f"{address!r} is not an IP address.") from None
            attempts = AxesProxyHandler.reset_attempts(ip_address=address)
            for limit in ADDRESS_LIMITS:
                limit.lift(address)
            self.stdout.write(f"{address}: {attempts} log-in attempt record"
                              f"{'s' if attempts != 1 else ''} removed; sign-up and "
                              "password-reset limits lifted.")
