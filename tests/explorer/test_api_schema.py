"""The OpenAPI document at /api/v1/openapi.json (explorer/api_schema.py): it describes every
route of explorer/api_urls.py and nothing else, its references resolve, and real responses
carry what it documents (a small validator for the JSON Schema keywords the document uses)."""
import re
from unittest import mock

from django.urls import reverse

from explorer import api_urls
from explorer.api_schema import DOCUMENT
from explorer.models import Run
from tests.explorer.access import SOFTMAX, AccessTestCase

METHODS = {"get", "post", "put", "patch", "delete"}
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
         "integer": int, "number": (int, float)}


def resolve(schema: dict) -> dict:
    while "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        schema = DOCUMENT["components"]["schemas"][name]
    return schema


def problems(value, schema: dict, where: str = "$") -> list[str]:
    """What in `value` disagrees with `schema` (type, enum, required, properties, items,
    additionalProperties, allOf)."""
    schema = resolve(schema)
    found = []
    for part in schema.get("allOf", []):
        found += problems(value, part, where)
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        is_bool = isinstance(value, bool)
        if not any(isinstance(value, TYPES[name]) and (name == "boolean" or not is_bool)
                   for name in names):
            return found + [f"{where}: {value!r:.60} is not {names}"]
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: {value!r} not in {schema['enum']}")
    if isinstance(value, dict):
        found += [f"{where}: no {key!r}" for key in schema.get("required", [])
                  if key not in value]
        for key, item in value.items():
            item_schema = schema.get("properties", {}).get(key)
            if item_schema is None and isinstance(schema.get("additionalProperties"), dict):
                item_schema = schema["additionalProperties"]
            if item_schema is not None:
                found += problems(item, item_schema, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found += problems(item, schema["items"], f"{where}[{index}]")
    return found


def walk(node):
    yield node
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
    for child in children:
        yield from walk(child)


class SchemaDocumentTests(AccessTestCase):
    def test_it_is_served_to_anyone_as_openapi_3_1(self):
        response = self.client.get(reverse("api-openapi"))

        self.assertEqual(response.status_code, 200)
        document = response.json()
        self.assertEqual(document["openapi"], "3.1.0")
        self.assertEqual(document["servers"], [{"url": "http://testserver/api/v1"}])
        self.assertEqual(document["paths"], DOCUMENT["paths"])

    def test_every_route_has_a_path_and_every_path_a_route(self):
        routes = {"/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(pattern.pattern))
                  for pattern in api_urls.urlpatterns}

        self.assertEqual(routes, set(DOCUMENT["paths"]))

    def test_every_path_parameter_is_declared(self):
        for path, item in DOCUMENT["paths"].items():
            placeholders = set(re.findall(r"{(\w+)}", path))
            for method, operation in item.items():
                declared = {parameter["name"] for parameter in operation.get("parameters", [])
                            if parameter["in"] == "path"}
                self.assertEqual(declared, placeholders, f"{method} {path}")

    def test_every_operation_has_a_unique_id_a_summary_and_a_success_response(self):
        operations = [operation for item in DOCUMENT["paths"].values()
                      for method, operation in item.items() if method in METHODS]
        ids = [operation["operationId"] for operation in operations]

        self.assertEqual(len(ids), len(set(ids)))
        for operation in operations:
            self.assertTrue(operation["summary"])
            self.assertTrue(any(code.startswith("2") for code in operation["responses"]))
            for response in operation["responses"].values():
                self.assertTrue(response["description"])

    def test_every_reference_resolves(self):
        schemas = DOCUMENT["components"]["schemas"]
        refs = [node["$ref"] for node in walk(DOCUMENT) if isinstance(node, dict)
                and "$ref" in node]

        self.assertTrue(refs)
        for ref in refs:
            self.assertIn(ref.removeprefix("#/components/schemas/"), schemas, ref)

    def test_the_validator_notices_a_missing_key_and_a_wrong_type(self):
        status = {"status": "done", "stage": "", "progress_done": 1, "progress_total": "1",
                  "error": "", "error_stage": "", "stage_detail": "", "interrupted": False,
                  "stages": []}

        self.assertEqual(problems(status, {"$ref": "#/components/schemas/Status"}),
                         ["$: no 'finished'", "$.progress_total: '1' is not ['integer']"])


@mock.patch("explorer.runs.enqueue_compile")
class ResponsesMatchTheSchemaTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.TEAM)
        cls.queued = cls.make_run("q" * 22)

    def check(self, response, path: str, method: str = "get"):
        operation = DOCUMENT["paths"][path][method]
        code = str(response.status_code)
        self.assertIn(code, operation["responses"], f"{method} {path}")
        schema = operation["responses"][code]["content"]["application/json"]["schema"]
        self.assertEqual(problems(response.json(), schema), [], f"{method} {path} {code}")

    def test_the_run_endpoints_answer_as_documented(self, enqueue):
        self.client.force_login(self.owner)
        run, kernel = self.done.pk, ("h100", "cost", "stitch-regional.0")
        cases = [
            ("/runs", reverse("api-runs")),
            ("/runs/{run_id}", reverse("api-run", args=[run])),
            ("/runs/{run_id}/status", reverse("api-run-status", args=[run])),
            ("/runs/{run_id}/results", reverse("api-run-results", args=[run])),
            ("/runs/{run_id}/kernels/{device}/{strategy}/{kernel}",
             reverse("api-run-kernel", args=[run, *kernel])),
            ("/runs/{run_id}/export.json", reverse("api-run-export-json", args=[run])),
            ("/runs/{run_id}/graph", reverse("api-run-graph", args=[run])),
            ("/runs/{run_id}/graph", reverse("api-run-graph", args=[run]) + "?device=tpu"),
            ("/runs/{run_id}/results", reverse("api-run-results", args=[self.queued.pk])),
            ("/runs/{run_id}", reverse("api-run", args=["x" * 22])),
        ]
        for path, url in cases:
            with self.subTest(url=url):
                self.check(self.client.get(url), path)

    def test_a_submission_answers_as_documented(self, enqueue):
        self.client.force_login(self.owner)
        body = {"filename": "softmax.hlo", "text": SOFTMAX.read_text()}
        for expected in (201, 200, 400):
            if expected == 400:
                body["text"] = "HloModule m\n"
            response = self.client.post(reverse("api-runs"), body,
                                        content_type="application/json")
            self.assertEqual(response.status_code, expected)
            self.check(response, "/runs", "post")

    def test_an_anonymous_caller_gets_the_documented_401(self, enqueue):
        self.check(self.client.get(reverse("api-runs")), "/runs")
