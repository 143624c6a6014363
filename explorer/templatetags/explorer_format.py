"""Number formats shared by the run and kernel pages; a missing value shows as a dash."""
from pathlib import PurePath

from django import template
from explorer.presenters import NOT_MEASURED, format_bytes, sol_ratio

register = template.Library()
MISSING = "–"


@register.filter
def us(value):
    """Microseconds: 3 significant figures below 10 (trailing zeros kept, so a column of times
    lines up: 3.00, 3.24), 2 decimals above."""
    if value is None:
        return MISSING
    return f"{value:#.3g} µs" if abs(value) < 10 else f"{value:,.2f} µs"


@register.filter
def measured_us(value):
    return NOT_MEASURED if value is None else us(value)


# Projected time over speed of light: "1.4×", "220×".
register.filter("sol_ratio", sol_ratio)


@register.filter
def percent(fraction):
    return MISSING if fraction is None else f"{100 * fraction:.1f} %"


@register.filter
def signed_percent(fraction):
    return MISSING if fraction is None else f"{100 * fraction:+.1f} %"


@register.filter
def speedup(value):
    return MISSING if value is None else f"{value:.2f}×"


@register.filter(name="bytes")
def bytes_(value):
    return MISSING if value is None else format_bytes(value)


@register.filter
def number(value, digits=2):
    if value is None:
        return MISSING
    if isinstance(value, bool) or isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


@register.filter
def signed(value):
    """A count's difference with its sign: +2, −3 (a minus sign, as signed_us writes it)."""
    if value is None:
        return MISSING
    return f"{'+' if value >= 0 else '−'}{abs(value)}"


@register.filter
def signed_us(value):
    """A time difference with its sign: +1.25 µs, −0.50 µs."""
    if value is None:
        return MISSING
    return f"{'+' if value >= 0 else '−'}{us(abs(value))}"


@register.filter
def signed_bytes(value):
    if value is None:
        return MISSING
    return f"{'+' if value >= 0 else '−'}{format_bytes(abs(value))}"


@register.filter
def file_name(path):
    """A file's name without its folders: pages show no paths of the server's disk."""
    return PurePath(str(path)).name if path else path


@register.filter
def lookup(mapping, key):
    """mapping[key] in a template, where the key is a variable (a QueryDict's last value)."""
    return mapping.get(key)


@register.simple_tag
def public_sample_run(sample) -> str | None:
    """The id of the finished public run `manage.py load_samples` made of this sample (a
    forms.Sample), if there is one: what the landing page's card links to for a visitor who
    cannot upload."""
    from explorer.management.commands.load_samples import SAMPLES_USERNAME
    from explorer.models import Run

    return Run.objects.filter(owner__username=SAMPLES_USERNAME, filename=sample.path.name,
                              visibility=Run.PUBLIC, status=Run.DONE) \
        .values_list("pk", flat=True).first()
