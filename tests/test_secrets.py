import hashlib

from gateway_core.secrets import hash_key, hash_password, key_prefix, new_api_key, verify_password


def test_new_api_key_is_long_random_and_prefixed():
    keys = {new_api_key() for _ in range(50)}
    assert len(keys) == 50
    for key in keys:
        assert key.startswith("sk-")
        assert len(key) >= 3 + 43  # 32 random bytes in URL-safe base64
        assert all(c.isalnum() or c in "-_" for c in key[3:])


def test_hash_key_is_sha256_hex():
    key = new_api_key()
    assert hash_key(key) == hashlib.sha256(key.encode()).hexdigest()
    assert hash_key(key) == hash_key(key)
    assert hash_key(key) != hash_key(key + "x")


def test_key_prefix_is_short_and_recognisable():
    key = new_api_key()
    prefix = key_prefix(key)
    assert prefix.startswith("sk-") and prefix.endswith("…")
    assert key.startswith(prefix[:-1])
    assert len(prefix) - len("sk-…") == 4


def test_password_round_trip():
    stored = hash_password("correct horse")
    assert stored.startswith("scrypt$16384$8$1$")
    assert "correct horse" not in stored
    assert verify_password("correct horse", stored)
    assert not verify_password("wrong horse", stored)


def test_password_hashes_are_salted():
    assert hash_password("same") != hash_password("same")


def test_verify_password_rejects_missing_or_malformed():
    assert not verify_password("x", None)
    assert not verify_password("x", "")
    assert not verify_password("x", "plain")
    assert not verify_password("x", "scrypt$1$2$3$%%%$%%%")
    assert not verify_password("x", "bcrypt$16384$8$1$AAAA$AAAA")
    assert not verify_password("", hash_password("y"))


def test_verify_uses_parameters_stored_with_the_hash():
    stored = hash_password("pw")
    scheme, n, r, p, salt, digest = stored.split("$")
    # a hash made with other (cheaper) parameters still verifies
    import base64

    raw_salt = base64.urlsafe_b64decode(salt + "==")
    cheap = hashlib.scrypt(b"pw", salt=raw_salt, n=1024, r=8, p=1, dklen=32)
    other = "$".join([scheme, "1024", r, p, salt, base64.urlsafe_b64encode(cheap).rstrip(b"=").decode()])
    assert verify_password("pw", other)


def test_records_leave_as_json_with_upstream_secrets_masked():
    from gateway_core.runtime.jsonable import to_jsonable
    from gateway_core.records import ChannelRecord, DisabledKey

    channel = ChannelRecord(
        id=1, name="c", type="t", base_url="http://127.0.0.1:9", api_keys=("sk-upstream-secret-1", "sk-upstream-secret-2"),
        models=("m",), model_map={}, groups=("default",), headers={"X-Token": "header-secret-value"},
        disabled_keys=(DisabledKey(index=1, fingerprint="abcd", reason="refused", at=1.0),),
    )  # fmt: skip
    data = to_jsonable([channel])[0]
    text = repr(data)
    assert "sk-upstream-secret" not in text and "header-secret-value" not in text and "abcd" not in text
    assert data["disabled_keys"] == [{"index": 1, "reason": "refused", "at": 1.0}] and data["models"] == ["m"]
