"""`python manage.py create_invite [--team NAME] [--uses N] [--days N] [--base-url URL]`: make
an invite link and print it (a site invite, for sign-up while SIGNUP_INVITE_ONLY is on, or a
team's, which makes whoever uses it a member)."""
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from explorer.models import Invite, Team


class Command(BaseCommand):
    help = "Make an invite link to the site, or to a team (--team), and print it."

    def add_arguments(self, parser):
        parser.add_argument("--team", default=None, help="the team whose link it is")
        parser.add_argument("--uses", type=int, default=1,
                            help="how many people may use it (default 1)")
        parser.add_argument("--days", type=int, default=7,
                            help="days until it expires (default 7)")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000",
                            help="the site's address, put before the link's path")

    def handle(self, *args, team: str | None, uses: int, days: int, base_url: str, **options):
        if uses < 1 or days < 1:
            raise CommandError("--uses and --days must be at least 1")
        chosen = None
        if team is not None:
            chosen = Team.objects.filter(name=team).first()
            if chosen is None:
                raise CommandError(f"no team {team!r}")
        invite = Invite.make(None, chosen, max_uses=uses, days=days)
        self.stdout.write(base_url.rstrip("/") + reverse("explorer-invite", args=[invite.token]))
        where = f"the team {chosen.name}" if chosen else "the site"
        self.stderr.write(f"Invite {invite.pk} to {where}: {uses} use{'s' if uses != 1 else ''}, "
                          f"until {invite.expires:%Y-%m-%d %H:%M} UTC.")
