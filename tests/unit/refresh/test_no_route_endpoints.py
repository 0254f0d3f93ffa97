"""A catalog without an endpoint, as Iceberg's REST fixture (1.11.0) says it: 400 BadRequestException
"No route for request" instead of 404, or an advertised `endpoints` list (/v1/config) that leaves
the route out. The refresh chain and `maintain` take either for a missing endpoint; any other 400
stays a bad request. A loopback server answers what the fixture answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pyspark_catalog_ext.errors import CatalogError, CatalogUnsupportedError, PolicyApiUnavailableError
from pyspark_catalog_ext.governance.policies import PolarisPolicySource
from pyspark_catalog_ext.refresh.strategies import CredentialsEndpointStrategy, StrategyChain
from tests.servers.scripted_catalog import T_PATH, R, Scripted, make


def _bad_request(message: str) -> R:
    return R(400, {"error": {"message": message, "type": "BadRequestException", "code": 400}})


NO_ROUTE = _bad_request("No route for request: GET v1/wh/namespaces/db/tables/t/credentials")
MALFORMED = _bad_request("Malformed request: storageRefreshToken and planId are exclusive")
LOADED = R(200, {"metadata-location": "s3://wh/db/t/metadata/v1.metadata.json", "metadata": {"location": "s3://wh/db/t"},
                 "config": {"s3.access-key-id": "AK", "s3.secret-access-key": "SK"}})
REQ: Any = {"catalog": "lake", "namespace": ["db"], "table": "t", "staged": False, "location": "s3://wh/db/t"}


@pytest.fixture
def srv() -> Iterator[Scripted]:
    s = Scripted()
    yield s
    s.close()


def _renew_twice(srv: Scripted) -> list[str]:
    client, chain = make(srv), StrategyChain()
    strategies = [chain.fetch(client, REQ)["strategy"] for _ in range(2)]
    assert all(s.split(" ")[0] == "reload" for s in strategies), strategies
    return strategies


def test_a_no_route_400_for_credentials_is_remembered(srv: Scripted) -> None:
    srv.config()
    srv.on("GET", T_PATH + "/credentials", NO_ROUTE)
    srv.on("GET", T_PATH, LOADED)
    first, second = _renew_twice(srv)
    assert "No route for request" in first and second == "reload"
    assert len(srv.requests("GET", T_PATH + "/credentials")) == 1  # asked once, then remembered
    assert len(srv.requests("GET", T_PATH)) == 2


def test_another_400_is_not_taken_for_a_missing_endpoint(srv: Scripted) -> None:
    srv.config()
    srv.on("GET", T_PATH + "/credentials", MALFORMED)
    srv.on("GET", T_PATH, LOADED)
    _renew_twice(srv)
    assert len(srv.requests("GET", T_PATH + "/credentials")) == 2  # a real bad request: asked again next time
    with pytest.raises(CatalogError) as err:
        make(srv).load_credentials_json(("db", "t"))
    assert not isinstance(err.value, CatalogUnsupportedError) and err.value.status == 400


def test_an_unlisted_credentials_route_is_asked_once_and_its_404_remembered(srv: Scripted) -> None:
    srv.config(endpoints=["GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"])
    srv.on("GET", T_PATH, LOADED)
    first, second = _renew_twice(srv)  # the route answers the scripted server's 404
    assert "credentials-endpoint failed" in first and second == "reload"
    assert len(srv.requests("GET", T_PATH + "/credentials")) == 1  # tried once, then remembered


def test_an_unlisted_credentials_route_that_answers_is_used(srv: Scripted) -> None:
    """Polaris lists its endpoints without GET .../credentials and answers it (tests/emulators/
    observed/polaris-1.4.1.json: config.endpoints.has-credentials false, credentials.status 200)."""
    srv.config(endpoints=["GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"])
    srv.on("GET", T_PATH + "/credentials",
           R(200, {"storage-credentials": [{"prefix": "s3://wh/db/t", "config": {"s3.access-key-id": "AK2"}}]}))
    chain = StrategyChain()
    assert [chain.fetch(make(srv), REQ)["strategy"] for _ in range(2)] == ["credentials-endpoint"] * 2
    assert srv.requests("GET", T_PATH) == []  # never fell back to a reload


def test_a_catalog_advertising_the_credentials_route_is_asked(srv: Scripted) -> None:
    srv.config(endpoints=["GET /v1/{prefix}/namespaces/{namespace}/tables/{table}", CredentialsEndpointStrategy.ENDPOINT])
    srv.on("GET", T_PATH + "/credentials",
           R(200, {"storage-credentials": [{"prefix": "s3://wh/db/t", "config": {"s3.access-key-id": "AK2"}}]}))
    answer = StrategyChain().fetch(make(srv), REQ)
    assert answer["strategy"] == "credentials-endpoint"


def test_maintain_takes_a_no_route_400_for_a_missing_policy_api(srv: Scripted) -> None:
    srv.config()
    srv.on("GET", "/polaris/v1/wh/applicable-policies",
           _bad_request("No route for request: GET polaris/v1/wh/applicable-policies"))
    with pytest.raises(PolicyApiUnavailableError) as err:
        PolarisPolicySource(make(srv)).applicable(("db",), "t")
    line = str(err.value)
    assert "has no Polaris policy API (400 on applicable-policies)" in line and "--policy-file" in line, line


def test_maintain_keeps_another_400_as_the_catalogs_error(srv: Scripted) -> None:
    srv.config()
    srv.on("GET", "/polaris/v1/wh/applicable-policies", _bad_request("Malformed request: page-size must be positive"))
    with pytest.raises(CatalogError) as err:
        PolarisPolicySource(make(srv)).applicable(("db",), "t")
    assert not isinstance(err.value, PolicyApiUnavailableError) and "page-size" in str(err.value)


def test_the_spark_catalog_read_takes_the_jvms_no_route_400_for_a_missing_route() -> None:
    """maintain through Spark reads the policy API on the shim's session: Iceberg's error handler turns
    the fixture's 400 into BadRequestException("Malformed request: No route for request: ...")."""
    from pyspark_catalog_ext.spark.java_errors import translate
    from tests.unit.spark.test_java_errors import ICEBERG, JavaThrowable

    subject = "GET /polaris/v1/{prefix}/applicable-policies in Spark catalog lake"
    no_route = translate(JavaThrowable(ICEBERG + "BadRequestException", "Malformed request: No route for request: "
                                       "GET polaris/v1/applicable-policies"), subject=subject)
    assert isinstance(no_route, CatalogUnsupportedError) and no_route.status == 400
    other = translate(JavaThrowable(ICEBERG + "BadRequestException", "Malformed request: parent"), subject=subject)
    assert isinstance(other, CatalogError) and not isinstance(other, CatalogUnsupportedError) and other.status == 400
