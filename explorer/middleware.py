"""The API answers in JSON for every status, an unhandled error included (logged first).

Django's own error pages are HTML: a 500 raised inside an API view, a 404 for an API path
that does not exist, a 400 for a body past DATA_UPLOAD_MAX_MEMORY_SIZE, a 403 from CSRF.
Under /api/ this middleware logs the unhandled exception with its traceback and answers
{"error": ...} with the status instead.
"""

from __future__ import annotations

import logging
from http import HTTPStatus

from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger("explorer.api")

API_PREFIX = "/api/"


class ApiJsonErrors:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path.startswith(API_PREFIX) or response.status_code < 400 \
                or response.get("Content-Type", "").startswith("application/json"):
            return response
        phrase = HTTPStatus(response.status_code).phrase.lower() \
            if response.status_code in HTTPStatus._value2member_map_ else "error"
        answer = JsonResponse({"error": phrase}, status=response.status_code)
        for header in ("Allow", "WWW-Authenticate", "Retry-After"):
            if header in response:
                answer[header] = response[header]
        return answer

    def process_exception(self, request: HttpRequest, exception: Exception):
        if not request.path.startswith(API_PREFIX):
            return None   # Django's handler logs it and shows the 500 page
        logger.error("unhandled error in %s %s", request.method, request.path,
                     exc_info=exception, extra={"request": request, "status_code": 500})
        return JsonResponse({"error": "internal server error; it is logged on the server"},
                            status=500)


class ContentSecurityPolicy:
    """Every response says where its page may load things from: only this site, no inline
    script or style, no plug-ins, in no frame (Content-Security-Policy; Django 5.2 has no
    setting for it). Our pages keep to that: their scripts and styles are static files, and
    what scripts style they set through the DOM. So an injected `<script>` or `onerror=`
    would not run even if a template ever failed to escape it. settings.CONTENT_SECURITY_POLICY
    holds the policy; an empty one sends no header."""

    def __init__(self, get_response):
        from django.conf import settings

        self.get_response = get_response
        self.policy = settings.CONTENT_SECURITY_POLICY

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        return response


class RefuseNulCharacters:
    """A NUL character in a request's path is a 404 and one in its query string a 400, before
    any view runs. No run, kernel, key or search holds one, and PostgreSQL refuses a NUL in any
    text it is sent, even only to compare with: `/r/abc%00` or `?q=%00` failed with a 500
    there, where SQLite found nothing. (Form fields are Django's CharFields, which refuse a NUL
    themselves; the API's JSON fields are checked by explorer.api.)"""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path:
            raise Http404("no address holds a NUL character")
        for key, values in request.GET.lists():
            if "\x00" in key or any("\x00" in value for value in values):
                raise BadRequest(f"the query parameter {key!r} holds a NUL character")
        return self.get_response(request)
