"""The JSON management API under ``/api/v1/``, Relaygate's first-party plugin
``relaygate-api`` (:mod:`.plugin`, an infrastructure entry point): one module per
resource, each operation a thin front over the core's admin layer
(:mod:`gateway_core.admin`). See the distribution's README.md.

- :mod:`.operation`: the declaration of an operation (method, path, scope,
  schemas) and the endpoint that authenticates, validates and runs it;
- :mod:`.auth`: personal access tokens and console sessions;
- :mod:`.errors`: the one error shape; :mod:`.schema`: the JSON schemas and
  their validator; :mod:`.openapi`: the OpenAPI document built from the
  declarations; :mod:`.docs_page`: its page, Swagger UI from ``static/``;
- :mod:`.mount`: every route under ``/api``, which :mod:`.plugin` mounts
  through ``register_routes`` (imported only when an app is built);
- resources: :mod:`.tokens`, :mod:`.keys`, :mod:`.usage`, :mod:`.wallet`,
  :mod:`.codes` (redemption codes), :mod:`.budgets`, :mod:`.users`,
  :mod:`.catalog` (groups and prices), :mod:`.channels`, :mod:`.audit`.
"""
