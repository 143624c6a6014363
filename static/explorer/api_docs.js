// The API docs page (explorer/api_docs.py): Swagger UI on the app's own OpenAPI schema. No
// validator badge (it would call swagger.io); requests "Try it out" sends carry the CSRF token
// of the page's session, so a logged-in user can try POSTs too.
"use strict";

(() => {
  const element = document.getElementById("swagger-ui");
  const csrf = document.cookie.split("; ").find((c) => c.startsWith("csrftoken="));
  window.SwaggerUIBundle({
    url: element.dataset.schemaUrl,
    domNode: element,
    validatorUrl: null,
    deepLinking: true,
    requestInterceptor: (request) => {
      if (csrf) request.headers["X-CSRFToken"] = csrf.split("=")[1];
      return request;
    },
  });
})();
