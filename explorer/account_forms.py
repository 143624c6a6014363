"""The forms of sign-up and of running a team: making one, inviting, changing a member's role."""
from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm

from explorer.account_models import ROLE_NAMES
from explorer.models import Membership, Team


class SignupForm(UserCreationForm):
    """A username, an e-mail address (for password-reset links; one account per address) and
    a password that passes AUTH_PASSWORD_VALIDATORS (UserCreationForm checks it, and that the
    username is free whatever its case)."""
    email = forms.EmailField(label="E-mail", max_length=254,
                             help_text="Where password-reset links go; never shown to others.")

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")

    def clean_email(self) -> str:
        email = get_user_model().objects.normalize_email(self.cleaned_data["email"])
        if get_user_model().objects.filter(email__iexact=email).exists():
            raise forms.ValidationError(
                "An account with this e-mail address exists already: log in, or reset its "
                "password.", code="email_taken")
        return email


class TeamForm(forms.Form):
    name = forms.CharField(max_length=100, label="Team name")

    def clean_name(self) -> str:
        name = " ".join(self.cleaned_data["name"].split())
        if not name:
            raise forms.ValidationError("Give the team a name.")
        if Team.objects.filter(name__iexact=name).exists():
            raise forms.ValidationError(f"A team named {name} exists already; pick another "
                                        "name.", code="team_taken")
        return name


# What the link form offers: how many people a link admits, and for how many days it works.
LINK_USES = [(1, "1 person"), (5, "5 people"), (25, "25 people")]
LINK_DAYS = [(1, "1 day"), (7, "7 days"), (30, "30 days")]


class LinkInviteForm(forms.Form):
    uses = forms.TypedChoiceField(coerce=int, choices=LINK_USES, initial=1, label="For")
    days = forms.TypedChoiceField(coerce=int, choices=LINK_DAYS, initial=7, label="Valid for")


class UserInviteForm(forms.Form):
    """An invitation of a user by name: they accept it on their teams page."""
    username = forms.CharField(max_length=150, label="Username")

    def __init__(self, *args, team: Team, **kwargs):
        super().__init__(*args, **kwargs)
        self.team = team

    def clean_username(self):
        name = self.cleaned_data["username"].strip()
        user = get_user_model().objects.filter(username__iexact=name, is_active=True).first()
        if user is None:
            raise forms.ValidationError(f"There is no user named {name}.", code="no_user")
        if Membership.objects.filter(team=self.team, user=user).exists():
            raise forms.ValidationError(f"{user.get_username()} is a member already.",
                                        code="member")
        return user


class RoleForm(forms.Form):
    """A role by the name the pages give it (owner, member); cleaned to Membership's."""
    role = forms.ChoiceField(choices=[(name, name) for name in ROLE_NAMES.values()])

    def clean_role(self) -> str:
        return {name: role for role, name in ROLE_NAMES.items()}[self.cleaned_data["role"]]
