"""`python manage.py create_api_token USER [--name NAME] [--scope read|submit] [--days N]`: make
an API key and print it once."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from explorer.models import ApiToken


class Command(BaseCommand):
    help = ("Create an API token for USER and print its key (only its hash is stored: copy it "
            "now). Scripts send it as 'Authorization: Bearer <key>'.")

    def add_arguments(self, parser):
        parser.add_argument("user", help="the username the token acts as")
        parser.add_argument("--name", default="", help="what the token is for, e.g. 'ci'")
        parser.add_argument("--scope", default=ApiToken.SUBMIT,
                            choices=[value for value, _ in ApiToken.SCOPES],
                            help="read: GET requests only; submit (the default): also submit, "
                                 "retry and delete runs and ask for measurements")
        parser.add_argument("--days", type=int, default=None,
                            help="days until the key expires (default: until revoked)")

    def handle(self, *args, user: str, name: str, scope: str, days: int | None, **options):
        account = get_user_model().objects.filter(username=user).first()
        if account is None:
            raise CommandError(f"no user {user!r}")
        if not account.is_active:
            raise CommandError(f"user {user!r} is not active")
        if days is not None and days < 1:
            raise CommandError("--days must be at least 1")
        token, key = ApiToken.create_for(account, name=name, scope=scope, days=days)
        self.stdout.write(key)
        until = f"until {token.expires:%Y-%m-%d %H:%M}" if token.expires else "until revoked"
        self.stderr.write(f"Created API token {token.pk} ({name or 'unnamed'}, scope {scope}, "
                          f"{until}) for {user}. This is the only time the key is shown.")
