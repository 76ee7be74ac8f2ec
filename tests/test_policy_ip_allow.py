"""The IP allow-list policy: IPv4 and IPv6 addresses and networks, parsed once per list."""

import pytest

from gateway_core.errors import PermissionDeniedError
from gateway_core.policies.ip_allow import IPAllowList, allowed, compile_networks
from gateway_core.testing import make_context, make_key_record

ALLOW = ("10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32", "::1/128")


@pytest.mark.parametrize("address", ["10.1.2.3", "192.0.2.7", "2001:db8::42", "::1", "::ffff:10.9.9.9"])
async def test_addresses_in_the_list_pass(address):
    await IPAllowList().admit(make_context(key=make_key_record(allow_ips=ALLOW), client_ip=address), None)


@pytest.mark.parametrize("address", ["11.0.0.1", "192.0.2.8", "2001:db9::1", "::2", "not-an-ip"])
async def test_addresses_outside_are_refused_naming_the_address(address):
    with pytest.raises(PermissionDeniedError) as caught:
        await IPAllowList().admit(make_context(key=make_key_record(allow_ips=ALLOW), client_ip=address), None)
    assert caught.value.status == 403 and caught.value.code == "ip_not_allowed"
    assert address in caught.value.message


async def test_an_unknown_address_is_refused_when_there_is_a_list():
    with pytest.raises(PermissionDeniedError, match="unknown address"):
        await IPAllowList().admit(make_context(key=make_key_record(allow_ips=ALLOW), client_ip=None), None)


async def test_no_list_means_any_address():
    await IPAllowList().admit(make_context(key=make_key_record(), client_ip=None), None)


async def test_networks_are_parsed_once_per_list():
    policy = IPAllowList()
    key = make_key_record(allow_ips=ALLOW)
    await policy.admit(make_context(key=key, client_ip="10.0.0.1"), None)
    compiled = policy._networks[ALLOW]
    other = make_key_record(id=2, allow_ips=ALLOW)  # another record, an equal tuple
    await policy.admit(make_context(key=other, client_ip="10.0.0.2"), None)
    assert policy._networks[ALLOW] is compiled and len(policy._networks) == 1


def test_allowed_helpers():
    networks = compile_networks(["127.0.0.1", "fe80::/10", "garbage"])
    assert len(networks) == 2
    assert allowed("127.0.0.1", networks) and allowed("fe80::1%eth0", networks)
    assert not allowed("127.0.0.2", networks)
