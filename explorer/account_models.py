"""Accounts beyond Django's own: teams and their members, invites (to a team, or to the site) and
the rules for changing a team's members.

These models sit below the runs (explorer/models.py imports them, to share a run with a team)
and import nothing of the rest of the app.

An invite is one of three kinds, told apart by its fields:
- a team's link (`team` set, no `invitee`): whoever opens the link and signs up or logs in
  joins the team, up to `max_uses` people, until `expires`;
- a site link (no `team`): made by staff (the admin site, `manage.py create_invite`), it lets
  someone sign up while SIGNUP_INVITE_ONLY is on;
- an invitation of a user by name (`team` and `invitee` set): no link; the invitee accepts or
  declines it on their teams page.

A link's token is `signing.dumps([pk, nonce])`: signed with SECRET_KEY, so a forged or edited
token is refused before any query, and carrying the invite's random nonce, so a link stays tied
to its row (a database rebuilt with the same key and ids does not revive old links). Nothing
in the token is secret from its holder, and nothing in the row works as a link without the key:
an owner can show a team's open links again at any time, and revoking one deletes its row.

Roles: a team's owners are its members with Membership.ADMIN ("owner" in every page). The role
existed before teams could be run without the admin site, meaning the same thing, so no
migration renames it. A team always keeps at least one owner (`set_role`, `remove_member`).
"""
from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.core import signing
from django.db import models, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.crypto import constant_time_compare


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    MEMBER, ADMIN = "member", "admin"
    ROLES = [(MEMBER, "member"), (ADMIN, "admin")]

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="memberships")
    role = models.CharField(max_length=10, choices=ROLES, default=MEMBER)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"],
                                               name="one_membership_per_team_and_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


OWNER, MEMBER = Membership.ADMIN, Membership.MEMBER
# What the pages call each role.
ROLE_NAMES = {OWNER: "owner", MEMBER: "member"}


def new_nonce() -> str:
    return secrets.token_urlsafe(16)


def in_a_week():
    """An invite's default expiry (the admin's add form starts with it)."""
    return timezone.now() + timedelta(days=7)


class Invite(models.Model):
    """An invite to a team or to the site (see the module docstring for the three kinds)."""
    SALT = "explorer.invite"

    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="invites")
    invitee = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                on_delete=models.CASCADE, related_name="invitations")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="invites_made")
    nonce = models.CharField(max_length=32, default=new_nonce, editable=False)
    max_uses = models.PositiveIntegerField(default=1)
    uses = models.PositiveIntegerField(default=0)
    used_by = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True,
                                     related_name="invites_used")
    created = models.DateTimeField(auto_now_add=True)
    expires = models.DateTimeField(default=in_a_week)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self) -> str:
        where = f"team {self.team}" if self.team_id else "the site"
        who = f" for {self.invitee}" if self.invitee_id else ""
        return f"invite {self.pk} to {where}{who} ({self.uses}/{self.max_uses} used)"

    @classmethod
    def make(cls, created_by, team: Team | None = None, max_uses: int = 1, days: int = 7,
             invitee=None) -> Invite:
        return cls.objects.create(team=team, created_by=created_by, invitee=invitee,
                                  max_uses=max_uses,
                                  expires=timezone.now() + timedelta(days=days))

    @classmethod
    def invite_user(cls, team: Team, created_by, invitee, days: int = 30) -> Invite:
        """The user's open invitation to the team, made now or renewed (one per team and
        user: inviting twice does not list the team twice on their page)."""
        pending = cls.open().filter(team=team, invitee=invitee).first()
        if pending is None:
            return cls.make(created_by, team, 1, days, invitee=invitee)
        pending.expires = timezone.now() + timedelta(days=days)
        pending.created_by = created_by
        pending.save(update_fields=["expires", "created_by"])
        return pending

    @classmethod
    def open(cls) -> models.QuerySet[Invite]:
        """The invites that can still be used: not expired, not used up."""
        return cls.objects.filter(expires__gt=timezone.now(), uses__lt=F("max_uses"))

    # --- Links ------------------------------------------------------------------------------

    @property
    def is_link(self) -> bool:
        return self.invitee_id is None

    @property
    def token(self) -> str:
        return signing.dumps([self.pk, self.nonce], salt=self.SALT)

    @classmethod
    def from_token(cls, token: str) -> Invite | None:
        """The link invite the token names, used up or expired or not; None for a token that
        is forged, mangled or names no link (an invitation by name is not a link)."""
        try:
            pk, nonce = signing.loads(token, salt=cls.SALT)
        except (signing.BadSignature, TypeError, ValueError):
            return None
        if not isinstance(pk, int) or not isinstance(nonce, str):
            return None
        invite = cls.objects.select_related("team", "created_by") \
            .filter(pk=pk, invitee=None).first()
        if invite is None or not constant_time_compare(invite.nonce, nonce):
            return None
        return invite

    # --- State --------------------------------------------------------------------------------

    @property
    def expired(self) -> bool:
        return self.expires <= timezone.now()

    @property
    def used_up(self) -> bool:
        return self.uses >= self.max_uses

    @property
    def usable(self) -> bool:
        return not self.expired and not self.used_up

    @property
    def problem(self) -> str:
        """Why the invite cannot be used ("" when it can), in words for its holder."""
        if self.expired:
            return "This invite has expired."
        if self.used_up:
            return "This invite has been used as many times as it allows."
        return ""

    def redeem(self, user) -> bool:
        """Count one use of the invite by `user` and, for a team invite, make them a member
        (of a team they are in already: nothing is counted). False when the invite cannot be
        used any more: expired, or used up, perhaps by someone else a moment ago (the use is
        counted by one conditional UPDATE, so a link for one person admits one)."""
        with transaction.atomic():
            if self.team_id and Membership.objects.filter(team_id=self.team_id,
                                                          user=user).exists():
                return True
            counted = Invite.open().filter(pk=self.pk).update(uses=F("uses") + 1)
            if counted != 1:
                return False
            self.used_by.add(user)
            if self.team_id:
                Membership.objects.create(team_id=self.team_id, user=user, role=MEMBER)
        self.refresh_from_db(fields=["uses"])
        return True


# --- Team members -------------------------------------------------------------------------------

class LastOwner(Exception):
    """The change would leave the team without an owner."""

    def __init__(self, team: Team):
        super().__init__(f"{team.name} needs an owner: make another member an owner first.")


def create_team(name: str, owner) -> Team:
    """A new team with `owner` as its first owner."""
    with transaction.atomic():
        team = Team.objects.create(name=name)
        Membership.objects.create(team=team, user=owner, role=OWNER)
    return team


def is_owner(team: Team, user) -> bool:
    return Membership.objects.filter(team=team, user=user, role=OWNER).exists()


def _check_owner_stays(team: Team, membership: Membership) -> None:
    """LastOwner when `membership` is the team's only owner. Called inside the transaction
    that makes the change: SQLite takes its write lock as the transaction starts (the
    settings' IMMEDIATE mode) and PostgreSQL locks the owners' rows, so two owners demoting
    each other at once cannot both pass."""
    if membership.role != OWNER:
        return
    owners = Membership.objects.select_for_update().filter(team=team, role=OWNER)
    if not owners.exclude(pk=membership.pk).exists():
        raise LastOwner(team)


def set_role(team: Team, user, role: str) -> Membership:
    """Give a member `role`; LastOwner when that would leave no owner. DoesNotExist for a
    user who is not a member."""
    if role not in ROLE_NAMES:
        raise ValueError(f"role must be one of {', '.join(ROLE_NAMES)}")
    with transaction.atomic():
        membership = Membership.objects.select_for_update().get(team=team, user=user)
        if role != OWNER:
            _check_owner_stays(team, membership)
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


def remove_member(team: Team, user) -> None:
    """Take a member out of the team (an owner's removal, or a member leaving); LastOwner
    when they are its last owner. DoesNotExist for a user who is not a member. Their runs
    stay theirs and stay labelled with the team."""
    with transaction.atomic():
        membership = Membership.objects.select_for_update().get(team=team, user=user)
        _check_owner_stays(team, membership)
        membership.delete()
