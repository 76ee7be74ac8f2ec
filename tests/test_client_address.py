from gateway_core.base.asgi import ClientAddress


def scope(peer, *headers):
    return {"client": (peer, 5000), "headers": [(k.encode(), v.encode()) for k, v in headers]}


def test_without_trusted_proxies_the_socket_peer_counts():
    find = ClientAddress([])
    assert find(scope("10.0.0.5", ("x-forwarded-for", "1.2.3.4"))) == "10.0.0.5"


def test_forwarded_for_is_trusted_only_from_a_trusted_proxy():
    find = ClientAddress(["10.0.0.0/8", "::1"])
    assert find(scope("10.0.0.5", ("x-forwarded-for", "1.2.3.4"))) == "1.2.3.4"
    assert find(scope("192.0.2.9", ("x-forwarded-for", "1.2.3.4"))) == "192.0.2.9"
    # a client cannot smuggle an address through a chain: the nearest untrusted hop wins
    assert find(scope("10.0.0.5", ("x-forwarded-for", "6.6.6.6, 1.2.3.4, 10.0.0.7"))) == "1.2.3.4"
    assert find(scope("::1", ("forwarded", 'for="[2001:db8::7]:4711";proto=https'))) == "2001:db8::7"
    assert find(scope("::1", ("forwarded", "for=192.0.2.60:80"))) == "192.0.2.60"
