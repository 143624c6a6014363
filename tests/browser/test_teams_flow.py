"""Issue 19's accounts and teams, end to end in Chromium: a new person signs up, makes a team
and an invite link; a second new person signs up through the link and so joins; the first shares
a run with the team from its page, and both find it, with its best plans, on the team's page.
Made public, the run is in the gallery, where an anonymous visitor opens and exports it."""
import json
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from explorer import presenters
from explorer.account_models import MEMBER, OWNER
from explorer.models import Membership, Run, Team
from explorer.templatetags.explorer_format import us
from tests.browser.conftest import store_done_run
from tests.browser.test_upload_flow import assert_no_js_errors
from tests.browser.waits import TEST_TIMEOUT_S
from tests.explorer.access import SOFTMAX, softmax_artifact

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)


def fill_sign_up(page, username: str) -> None:
    """Fill in and send the sign-up form the page shows; the new user is logged in."""
    page.fill("#id_username", username)
    page.fill("#id_email", f"{username}@example.org")
    page.fill("#id_password1", f"{username}-fuses-kernels-19")
    page.fill("#id_password2", f"{username}-fuses-kernels-19")
    with page.expect_navigation():
        page.click("#signup-form button[type=submit]")
    expect(page.locator(".site-header__user")).to_have_text(username)


def test_two_new_people_sign_up_share_a_team_and_review_its_run(transactional_db, live_server,
                                                                 new_page, screenshots):
    base_url = live_server.url
    artifact = softmax_artifact()

    # Grace finds sign-up from the log-in page.
    grace = new_page()
    grace.goto(f"{base_url}/accounts/login/")
    with grace.expect_navigation():
        grace.click("#signup-link")
    screenshots(grace, "signup")
    fill_sign_up(grace, "grace")
    assert grace.url == f"{base_url}/"

    # She makes a team from the Teams link in the nav, and an invite link for two people.
    with grace.expect_navigation():
        grace.get_by_role("link", name="Teams", exact=True).click()
    expect(grace.locator("#no-teams")).to_be_visible()
    grace.fill("#id_name", "Kernel crew")
    with grace.expect_navigation():
        grace.click("#new-team-form button[type=submit]")
    expect(grace.locator("h1")).to_have_text("Kernel crew")
    team = Team.objects.get(name="Kernel crew")
    assert grace.url == f"{base_url}/teams/{team.pk}"
    grace.select_option("#invite-link-form select[name=uses]", "5")
    with grace.expect_navigation():
        grace.click("#invite-link-form button[type=submit]")
    link = grace.locator("#invite-links .team__link-text").first.input_value()
    assert re.fullmatch(rf"{re.escape(base_url)}/invite/\S+", link), link
    copy = grace.locator("#invite-links [data-copy-link]").first
    copy.click()
    expect(copy).not_to_have_text("copy")   # copied, or selected where the clipboard is refused
    assert_no_js_errors(grace)
    screenshots(grace, "team-invites")

    # Grace has a finished run of softmax; she shares it with the team from its page.
    owner = User.objects.get(username="grace")
    run = store_done_run(owner, "s" * 22, artifact, hlo=SOFTMAX, name="softmax by grace")
    grace.goto(f"{base_url}/r/{run.pk}")
    grace.locator(".run__settings summary").click()
    grace.select_option("#settings-form select[name=visibility]", "team")
    grace.select_option("#settings-form select[name=team]", str(team.pk))
    with grace.expect_navigation():
        grace.click("#settings-form button[type=submit]")
    run.refresh_from_db()
    assert (run.visibility, run.team) == (Run.TEAM, team)
    assert_no_js_errors(grace)

    # Hopper, new too, opens the link, signs up through it and lands on the team's page.
    hopper = new_page()
    hopper.goto(link)
    expect(hopper.locator("#invite-text")).to_contain_text("grace invited you to join the team")
    with hopper.expect_navigation():
        hopper.click("#invite-signup")
    expect(hopper.locator("#signup-invite")).to_contain_text("Kernel crew")
    fill_sign_up(hopper, "hopper")
    assert hopper.url == f"{base_url}/teams/{team.pk}"
    expect(hopper.locator("#messages")).to_contain_text("You joined the team Kernel crew.")
    assert set(Membership.objects.filter(team=team).values_list("user__username", "role")) \
        == {("grace", OWNER), ("hopper", MEMBER)}

    # Both see the run and its best plan per device on the team's page.
    best = presenters.best_totals(artifact)
    grace.goto(f"{base_url}/teams/{team.pk}")
    for page in (grace, hopper):
        expect(page.locator("#team-runs tbody tr")).to_have_count(1)
        expect(page.locator("#team-runs")).to_contain_text("softmax by grace")
        rows = page.locator("#best-plans tbody tr")
        expect(rows).to_have_count(len(best))
        for index, plan in enumerate(best):
            cells = rows.nth(index).locator("td").all_inner_texts()
            assert cells[1:6] == [plan["device"], plan["strategy"], us(plan["proj_us"]),
                                  "softmax by grace", "grace"], cells
        expect(page.locator("#member-list")).to_contain_text("hopper")
        assert_no_js_errors(page)
    screenshots(hopper, "team")

    # The run's link from the team page opens it for the new member.
    with hopper.expect_navigation():
        hopper.locator("#team-runs a", has_text="softmax by grace").click()
    assert hopper.url == f"{base_url}/r/{run.pk}"
    expect(hopper.locator(".comparison__table").first).to_be_visible()
    assert_no_js_errors(hopper)

    # Grace makes the run public; an anonymous visitor finds it in the gallery, opens it and
    # downloads its JSON export, which holds the run's plans.
    grace.goto(f"{base_url}/r/{run.pk}")
    grace.locator(".run__settings summary").click()
    grace.select_option("#settings-form select[name=visibility]", "public")
    with grace.expect_navigation():
        grace.click("#settings-form button[type=submit]")
    visitor = new_page()
    visitor.goto(f"{base_url}/gallery")
    expect(visitor.locator(".site-header__user")).to_have_count(0)
    card = visitor.locator("#gallery a", has_text="softmax by grace")
    expect(card).to_contain_text("by grace")
    with visitor.expect_navigation():
        card.click()
    assert visitor.url == f"{base_url}/r/{run.pk}"
    expect(visitor.locator(".comparison__table").first).to_be_visible()
    with visitor.expect_download() as download:
        visitor.get_by_role("link", name="JSON", exact=True).click()
    exported = json.loads(Path(download.value.path()).read_text())
    assert exported["run"]["id"] == run.pk
    assert set(exported["artifact"]["devices"]) == set(artifact["devices"])
    assert_no_js_errors(visitor)
    screenshots(visitor, "gallery-visitor-run")
