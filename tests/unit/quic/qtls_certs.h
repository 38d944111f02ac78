/* SPDX-License-Identifier: MIT */
/* Test PKI for the QUIC TLS handshake tests (openssl CLI, valid for 100 years from 2026-11-30):
 * a P-256 CA, another CA nobody trusts, server leaves for "localhost" and 127.0.0.1 with P-256,
 * RSA-2048 and Ed25519 keys, and a P-256 client certificate (clientAuth). */
#ifndef VEGA_TEST_QTLS_CERTS_H
#define VEGA_TEST_QTLS_CERTS_H

static const char QT_CA_PEM[] = "-----BEGIN CERTIFICATE-----\n"
                                "MIIBnjCCAUWgAwIBAgIUfY+ZzP9uI9WmlDkEG9/aH4XCB/UwCgYIKoZIzj0EAwIw\n"
                                "HDEaMBgGA1UEAwwRdmVnYSBxdGxzIHRlc3QgQ0EwIBcNMjYxMTMwMDQzMDAyWhgP\n"
                                "MjEyNjExMDYwNDMwMDJaMBwxGjAYBgNVBAMMEXZlZ2EgcXRscyB0ZXN0IENBMFkw\n"
                                "EwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEHVHQXgjnHkWLyWnDkO41nHGCCnk3w0OX\n"
                                "l28U1lfGIv2qTd5lvkZn3fRJx/km4GwKYBImKhFn/twf9X9OkM32k6NjMGEwHQYD\n"
                                "VR0OBBYEFHL5ue1pP2orHVRsUngfy41XlvNxMB8GA1UdIwQYMBaAFHL5ue1pP2or\n"
                                "HVRsUngfy41XlvNxMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoG\n"
                                "CCqGSM49BAMCA0cAMEQCID7MDET9KJtoSAW6R73L3Z4cpfRM8Hj2fUA0vQZYGgqU\n"
                                "AiBY/FfbGNDYkPCQAdiQJUN8aolWOKT7s/1+F9Jh+8whbg==\n"
                                "-----END CERTIFICATE-----\n";

static const char QT_OTHER_CA_PEM[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBoTCCAUegAwIBAgIUXFAQZVkf7MTJBG/sILgS6KP5h5EwCgYIKoZIzj0EAwIw\n"
    "HTEbMBkGA1UEAwwSdmVnYSBxdGxzIG90aGVyIENBMCAXDTI2MTEzMDA0MzAwMloY\n"
    "DzIxMjYxMTA2MDQzMDAyWjAdMRswGQYDVQQDDBJ2ZWdhIHF0bHMgb3RoZXIgQ0Ew\n"
    "WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQfRj0uSmpybgA7OuZTsBngSqQQkysC\n"
    "iIe0ij/PzyIufqvMMPObZxBDlL+SFfSfWr+EBD/s/XT1bzq0cw8cvDm3o2MwYTAd\n"
    "BgNVHQ4EFgQULCpYGMGk14d2tFO3XB6SzK+Ml3MwHwYDVR0jBBgwFoAULCpYGMGk\n"
    "14d2tFO3XB6SzK+Ml3MwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8BAf8EBAMCAQYw\n"
    "CgYIKoZIzj0EAwIDSAAwRQIgbFh9dML5i21ydx7ANNcyzv4oOGIXK0GFzB/MLPGj\n"
    "TT0CIQCD7XYSz980iaMBZgZMw4xteBgOyvYTOLWs3A170vG+OQ==\n"
    "-----END CERTIFICATE-----\n";

static const char QT_SRV_P256_PEM[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBxDCCAWmgAwIBAgIUJAuzuejtjfFzoGZgrl6Vl11p7WQwCgYIKoZIzj0EAwIw\n"
    "HDEaMBgGA1UEAwwRdmVnYSBxdGxzIHRlc3QgQ0EwIBcNMjYxMTMwMDQzMDAyWhgP\n"
    "MjEyNjExMDYwNDMwMDJaMBMxETAPBgNVBAMMCHNydl9wMjU2MFkwEwYHKoZIzj0C\n"
    "AQYIKoZIzj0DAQcDQgAEgxd3kF7sYxe4tzDnCea8YsuA5jCBJZaktBAd+x99Htug\n"
    "9IZKMUjD9eBeycJqJG0TXqmBKdy1rj4CqE9e9eFR9aOBjzCBjDAJBgNVHRMEAjAA\n"
    "MA4GA1UdDwEB/wQEAwIHgDATBgNVHSUEDDAKBggrBgEFBQcDATAaBgNVHREEEzAR\n"
    "gglsb2NhbGhvc3SHBH8AAAEwHQYDVR0OBBYEFPfoU3r7L1cKl+5u9mEqEjpokLPb\n"
    "MB8GA1UdIwQYMBaAFHL5ue1pP2orHVRsUngfy41XlvNxMAoGCCqGSM49BAMCA0kA\n"
    "MEYCIQCm4lNDjL06Ggw5qe8oiFTnA+dCnTuuBfdTAnWM7DiJQAIhAOyN6FbbLnpF\n"
    "FDfFmxTLz2gkBaouqDCzZMcxUDPn+38u\n"
    "-----END CERTIFICATE-----\n";

static const char QT_SRV_P256_KEY[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgjAYFfM3DwL1mEfjo\n"
    "Ovr+3TfWhgzYylEbR2bldFP2EByhRANCAASDF3eQXuxjF7i3MOcJ5rxiy4DmMIEl\n"
    "lqS0EB37H30e26D0hkoxSMP14F7JwmokbRNeqYEp3LWuPgKoT1714VH1\n"
    "-----END PRIVATE KEY-----\n";

static const char QT_SRV_RSA_PEM[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIICjjCCAjOgAwIBAgIUJAuzuejtjfFzoGZgrl6Vl11p7WUwCgYIKoZIzj0EAwIw\n"
    "HDEaMBgGA1UEAwwRdmVnYSBxdGxzIHRlc3QgQ0EwIBcNMjYxMTMwMDQzMDAyWhgP\n"
    "MjEyNjExMDYwNDMwMDJaMBIxEDAOBgNVBAMMB3Nydl9yc2EwggEiMA0GCSqGSIb3\n"
    "DQEBAQUAA4IBDwAwggEKAoIBAQC0nbkv9SUawIEdJN3fivP8wM0bLZ3QQTZdlh9Q\n"
    "2u5XW5HbD35T1THCKqBEG/kKZcTd07Xb3E49fS5PZwSbtd7xPdwQxu3ILeKFkQCz\n"
    "HsmgMGy4A2KZXJW8jqwVLphce3qUO6QnY7vsdxxDCznxZEz5skyxc4g15UXbgB1Y\n"
    "MMO0Tqq+SZM7CI8jKxSw2v+faHks+XCXyyo8hEd6L7hrwRIV0OUWBEC711qLCdiO\n"
    "BgnMseROBmNsgWLSnSFwx1Tplxk0Z7aRlESTMBU173khoQDOFKahGg9Cbf6VKqWo\n"
    "5fa7WwxE/itJPk6bN+d88y6B8pM0zD3w7odgpkMW8s1KU/S9AgMBAAGjgY8wgYww\n"
    "CQYDVR0TBAIwADAOBgNVHQ8BAf8EBAMCB4AwEwYDVR0lBAwwCgYIKwYBBQUHAwEw\n"
    "GgYDVR0RBBMwEYIJbG9jYWxob3N0hwR/AAABMB0GA1UdDgQWBBRqTl2noAc+3oJg\n"
    "VpFYNGy7sho2AjAfBgNVHSMEGDAWgBRy+bntaT9qKx1UbFJ4H8uNV5bzcTAKBggq\n"
    "hkjOPQQDAgNJADBGAiEA0y/h8t36nnHNABCt4Gmimpcwk6V2qq3q4H5XT14I4x8C\n"
    "IQCSASozMs9FtcQ5b+E84eTXTNSVbDxMgmSHia6Ruq0xEQ==\n"
    "-----END CERTIFICATE-----\n";

static const char QT_SRV_RSA_KEY[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC0nbkv9SUawIEd\n"
    "JN3fivP8wM0bLZ3QQTZdlh9Q2u5XW5HbD35T1THCKqBEG/kKZcTd07Xb3E49fS5P\n"
    "ZwSbtd7xPdwQxu3ILeKFkQCzHsmgMGy4A2KZXJW8jqwVLphce3qUO6QnY7vsdxxD\n"
    "CznxZEz5skyxc4g15UXbgB1YMMO0Tqq+SZM7CI8jKxSw2v+faHks+XCXyyo8hEd6\n"
    "L7hrwRIV0OUWBEC711qLCdiOBgnMseROBmNsgWLSnSFwx1Tplxk0Z7aRlESTMBU1\n"
    "73khoQDOFKahGg9Cbf6VKqWo5fa7WwxE/itJPk6bN+d88y6B8pM0zD3w7odgpkMW\n"
    "8s1KU/S9AgMBAAECggEAOqwv7+HRY17csoR65PblKprRJj6L0Q6WJBGz65arLUqs\n"
    "V36xeXc8ukgRlv6FSLjlmm//WEQ5UGU9aYLcLt8GZNTFC9grf0dUmjIQCZ/7PKPu\n"
    "dVp4Kby3UbEBOsJPsV9VYxj6yubtsbPBxQ+9C2sbTFP88PpIacWoi1UTc0YoFQab\n"
    "Oe8whvq6QLw9IAbj4jfRXfvghNJJusCxubyF2bCAfg9ak1S0EpNxJ1WGCcgEBHZ3\n"
    "91AUraXEliB7zYKgEu7J/creDoZ8Wp2PzTP6jonpue6AMJe46Qhgmof/p65WRdQr\n"
    "ZVv6V6oNfAb3MKB0VhDelOC903vAhB5YSSUFUazcuwKBgQDhVh2GNychF5ii11W9\n"
    "61+IWWElRQmPclI/+y4jpA54GqTurYUcOjVHsEeou9fO2df6KgqU+ndCVVHdPuLk\n"
    "HUxhRi769PBld3xYeA7U3AuszbqSKBTHi9mDwVRfacs9FrTXvdZ2qseL0n1WlIhz\n"
    "3a+6hYSQAyt4mfT5HpT4j2FeDwKBgQDNMbgddoJRUZFmdxFseU3H+ZiWu9xMg7ap\n"
    "fN/z+iShLVvTQ4X5Ss/x9SaQiDW/hXNbU2P1Yn4Eql+w8khSpTaVgkP3O049MDSK\n"
    "ean68hicVn6AWGL6AzKuY/nXW8cEBqhFTt50YZ04WUQvq0HsdbLwYFujUfyn9FV/\n"
    "3v2fKfIMcwKBgFL+br1iTu0nTbacbR4YNQV5NgiOFulYh+a80s+ZuyKNXbXy/xXY\n"
    "cotG5/3DwcaUAbJIDcG1RnuOBSrh4Jt4Fwu019TipjAZBBlpjrzjlwE8fL0cOhsM\n"
    "7T5T1ImX451KYa0cZIMsf3aGPlfHOULDodenGZ4ZLMesnMesdd3eoVQNAoGABv9q\n"
    "Ev8mpJVOixsGahec8nPtoz5W3fkj8pXCoXRnaWO9nO/RktXdT5gXr5gllRl8/KFU\n"
    "aFrqh0g0KTmqA7+EpAakQLsyCN4q/In3pQo6kqJUgBYDkhkn0lCwhYqot9duR6bP\n"
    "6VIm5XQN4j5J6kF9T7tJhMFYB3ZKsCivp4zrp0cCgYEAu5RONG99xW1kb8D4vqpN\n"
    "5ASBY5zjrkXTQMp6tOFUwjsS3ZH5vwDtoxJkH7NVM2lpF9F2avh3a0OOb6niptQ3\n"
    "1xHGrzu+5f6lnoa0lslvpzt+e/YiyNSGFpaT5/K2X4ERL3M6yF5I5ZugX6vqbyhc\n"
    "RnXZ5qMyY9KOzA97kQg2Uhg=\n"
    "-----END PRIVATE KEY-----\n";

static const char QT_SRV_ED_PEM[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBkjCCATigAwIBAgIUJAuzuejtjfFzoGZgrl6Vl11p7WYwCgYIKoZIzj0EAwIw\n"
    "HDEaMBgGA1UEAwwRdmVnYSBxdGxzIHRlc3QgQ0EwIBcNMjYxMTMwMDQzMDAyWhgP\n"
    "MjEyNjExMDYwNDMwMDJaMBExDzANBgNVBAMMBnNydl9lZDAqMAUGAytlcAMhAC/q\n"
    "DN2nmZJDCwQFvBHN0oQarsuOqr1XO7gyvXsADM7Vo4GPMIGMMAkGA1UdEwQCMAAw\n"
    "DgYDVR0PAQH/BAQDAgeAMBMGA1UdJQQMMAoGCCsGAQUFBwMBMBoGA1UdEQQTMBGC\n"
    "CWxvY2FsaG9zdIcEfwAAATAdBgNVHQ4EFgQU0vT3ak/lJSwz+grQWAM38WviSkEw\n"
    "HwYDVR0jBBgwFoAUcvm57Wk/aisdVGxSeB/LjVeW83EwCgYIKoZIzj0EAwIDSAAw\n"
    "RQIhALVL2jhqTm/lDtQ8XDM28hJI1xlHQ1FoTYWT4Gg58/bEAiAxbmgYwdBtUutw\n"
    "sOnc5s3ZeG5Tp/gEqTVDD3L+aaJeJQ==\n"
    "-----END CERTIFICATE-----\n";

static const char QT_SRV_ED_KEY[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEIGAtawlC4NKB+PRvaG+l5AxIqs3edspZGfGUgLvZ2mr0\n"
    "-----END PRIVATE KEY-----\n";

static const char QT_CLIENT_PEM[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBpDCCAUmgAwIBAgIUJAuzuejtjfFzoGZgrl6Vl11p7WcwCgYIKoZIzj0EAwIw\n"
    "HDEaMBgGA1UEAwwRdmVnYSBxdGxzIHRlc3QgQ0EwIBcNMjYxMTMwMDQzMDAyWhgP\n"
    "MjEyNjExMDYwNDMwMDJaMBExDzANBgNVBAMMBmNsaWVudDBZMBMGByqGSM49AgEG\n"
    "CCqGSM49AwEHA0IABMiV3pXOcm2R13HMmgXsGWWDOWvQmCTClph22qGmtvsc+oTz\n"
    "yuMYMG9OTHbS+H8w9dg3cPCMo1Q9/gye9HgS4SejcjBwMAkGA1UdEwQCMAAwDgYD\n"
    "VR0PAQH/BAQDAgeAMBMGA1UdJQQMMAoGCCsGAQUFBwMCMB0GA1UdDgQWBBS20oDc\n"
    "IdL3xl5Oo8jOaoD4E5oEhTAfBgNVHSMEGDAWgBRy+bntaT9qKx1UbFJ4H8uNV5bz\n"
    "cTAKBggqhkjOPQQDAgNJADBGAiEAkkRbVKqraJq6rz+XHRMq+GIDUzNiJf3u+gvG\n"
    "a9ph2oUCIQDgE5d/ULGTrZSjUroLW2ZFf4jmazE9/UbuUlHP1SUs5A==\n"
    "-----END CERTIFICATE-----\n";

static const char QT_CLIENT_KEY[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQguiKpykLqWa9WZmZh\n"
    "Q/X+Ng0wPOWE0aMDuk8zLh2gpWmhRANCAATIld6VznJtkddxzJoF7Bllgzlr0Jgk\n"
    "wpaYdtqhprb7HPqE88rjGDBvTkx20vh/MPXYN3DwjKNUPf4MnvR4EuEn\n"
    "-----END PRIVATE KEY-----\n";

#endif
