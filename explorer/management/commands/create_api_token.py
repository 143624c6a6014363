"""`python manage.py create_api_token USER [--name NAME]`: make an API key and print it once."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from explorer.models import ApiToken


class Command(BaseCommand):
    help = ("Create an API token for USER and print its key (only its hash is stored: copy it "
            "now). Scripts send it as 'Authorization: Bearer <key>'.")

    def add_arguments(self, parser):
        parser.add_argument("user", help="the username the token acts as")
        parser.add_argument("--name", default="", help="what the token is for, e.g. 'ci'")

    def handle(self, *args, user: str, name: str, **options):
        account = get_user_model().objects.filter(username=user).first()
        if account is None:
            raise CommandError(f"no user {user!r}")
        if not account.is_active:
            raise CommandError(f"user {user!r} is not active")
        token, key = ApiToken.create_for(account, name=name)
        self.stdout.write(key)
        self.stderr.write(f"Created API token {token.pk} ({name or 'unnamed'}) for {user}. "
                          "This is the only time the key is shown.")
