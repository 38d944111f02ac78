/* SPDX-License-Identifier: MIT */
/* Initial secrets, packet and header protection, key update secrets and Retry integrity:
 * RFC 9001 Appendix A (v1) and RFC 9369 Appendix A (v2), byte for byte in both directions. */
#include <string.h>

#include <vega/quic_wire.h>

#include "quic_int.h"
#include "vtest.h"

static void check_hex(const uint8_t *got, size_t n, const char *want, int line)
{
    static uint8_t w[2048];
    size_t wn = vtest_unhex(want, w, sizeof w);
    if (wn != n || memcmp(got, w, n) != 0) {
        size_t i = 0;
        while (i < n && i < wn && got[i] == w[i])
            i++;
        vtest_fail(__FILE__, line, "mismatch at byte %zu (got %zu bytes, want %zu)", i, n, wn);
    }
}
#define CHECK_HEX(got, n, want) check_hex(got, n, want, __LINE__)

static const uint8_t DCID[8] = {0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08};
static const uint8_t SCID[8] = {0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42, 0x62, 0xb5};

/* The client's CRYPTO frame (ClientHello) of A.2, padded to 1162 bytes. */
static const char CLIENT_CRYPTO[] =
    "060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868"
    "04fe3a47f06a2b69484c00000413011302010000c000000010000e00000b6578"
    "616d706c652e636f6dff01000100000a00080006001d00170018001000070005"
    "04616c706e0005000501000000000033 00260024001d00209370b2c9caa47fba"
    "baf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400"
    "0d0010000e0403050306030203080408050806002d00020101001c0002400100"
    "3900320408ffffffffffffffff05048000ffff07048000ffff08011001048000"
    "75300901100f088394c8f03e51570806048000ffff";

/* The server's ACK + CRYPTO (ServerHello) payload of A.3. */
static const char SERVER_PAYLOAD[] =
    "02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739"
    "88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c94"
    "0d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00"
    "020304";

static const char V1_CLIENT_PACKET[] =
    "c000000001088394c8f03e5157080000449e7b9aec34d1b1c98dd7689fb8ec11"
    "d242b123dc9bd8bab936b47d92ec356c0bab7df5976d27cd449f63300099f399"
    "1c260ec4c60d17b31f8429157bb35a1282a643a8d2262cad67500cadb8e7378c"
    "8eb7539ec4d4905fed1bee1fc8aafba17c750e2c7ace01e6005f80fcb7df6212"
    "30c83711b39343fa028cea7f7fb5ff89eac2308249a02252155e2347b63d58c5"
    "457afd84d05dfffdb20392844ae812154682e9cf012f9021a6f0be17ddd0c208"
    "4dce25ff9b06cde535d0f920a2db1bf362c23e596d11a4f5a6cf3948838a3aec"
    "4e15daf8500a6ef69ec4e3feb6b1d98e610ac8b7ec3faf6ad760b7bad1db4ba3"
    "485e8a94dc250ae3fdb41ed15fb6a8e5eba0fc3dd60bc8e30c5c4287e53805db"
    "059ae0648db2f64264ed5e39be2e20d82df566da8dd5998ccabdae053060ae6c"
    "7b4378e846d29f37ed7b4ea9ec5d82e7961b7f25a9323851f681d582363aa5f8"
    "9937f5a67258bf63ad6f1a0b1d96dbd4faddfcefc5266ba6611722395c906556"
    "be52afe3f565636ad1b17d508b73d8743eeb524be22b3dcbc2c7468d54119c74"
    "68449a13d8e3b95811a198f3491de3e7fe942b330407abf82a4ed7c1b311663a"
    "c69890f4157015853d91e923037c227a33cdd5ec281ca3f79c44546b9d90ca00"
    "f064c99e3dd97911d39fe9c5d0b23a229a234cb36186c4819e8b9c5927726632"
    "291d6a418211cc2962e20fe47feb3edf330f2c603a9d48c0fcb5699dbfe58964"
    "25c5bac4aee82e57a85aaf4e2513e4f05796b07ba2ee47d80506f8d2c25e50fd"
    "14de71e6c418559302f939b0e1abd576f279c4b2e0feb85c1f28ff18f58891ff"
    "ef132eef2fa09346aee33c28eb130ff28f5b766953334113211996d20011a198"
    "e3fc433f9f2541010ae17c1bf202580f6047472fb36857fe843b19f5984009dd"
    "c324044e847a4f4a0ab34f719595de37252d6235365e9b84392b061085349d73"
    "203a4a13e96f5432ec0fd4a1ee65accdd5e3904df54c1da510b0ff20dcc0c77f"
    "cb2c0e0eb605cb0504db87632cf3d8b4dae6e705769d1de354270123cb11450e"
    "fc60ac47683d7b8d0f811365565fd98c4c8eb936bcab8d069fc33bd801b03ade"
    "a2e1fbc5aa463d08ca19896d2bf59a071b851e6c239052172f296bfb5e724047"
    "90a2181014f3b94a4e97d117b438130368cc39dbb2d198065ae3986547926cd2"
    "162f40a29f0c3c8745c0f50fba3852e566d44575c29d39a03f0cda721984b6f4"
    "40591f355e12d439ff150aab7613499dbd49adabc8676eef023b15b65bfc5ca0"
    "6948109f23f350db82123535eb8a7433bdabcb909271a6ecbcb58b936a88cd4e"
    "8f2e6ff5800175f113253d8fa9ca8885c2f552e657dc603f252e1a8e308f76f0"
    "be79e2fb8f5d5fbbe2e30ecadd220723c8c0aea8078cdfcb3868263ff8f09400"
    "54da48781893a7e49ad5aff4af300cd804a6b6279ab3ff3afb64491c85194aab"
    "760d58a606654f9f4400e8b38591356fbf6425aca26dc85244259ff2b19c41b9"
    "f96f3ca9ec1dde434da7d2d392b905ddf3d1f9af93d1af5950bd493f5aa731b4"
    "056df31bd267b6b90a079831aaf579be0a39013137aac6d404f518cfd4684064"
    "7e78bfe706ca4cf5e9c5453e9f7cfd2b8b4c8d169a44e55c88d4a9a7f9474241"
    "e221af44860018ab0856972e194cd934";

static const char V2_CLIENT_PACKET[] =
    "d76b3343cf088394c8f03e5157080000449ea0c95e82ffe67b6abcdb4298b485"
    "dd04de806071bf03dceebfa162e75d6c96058bdbfb127cdfcbf903388e99ad04"
    "9f9a3dd4425ae4d0992cfff18ecf0fdb5a842d09747052f17ac2053d21f57c5d"
    "250f2c4f0e0202b70785b7946e992e58a59ac52dea6774d4f03b55545243cf1a"
    "12834e3f249a78d395e0d18f4d766004f1a2674802a747eaa901c3f10cda5500"
    "cb9122faa9f1df66c392079a1b40f0de1c6054196a11cbea40afb6ef5253cd68"
    "18f6625efce3b6def6ba7e4b37a40f7732e093daa7d52190935b8da58976ff33"
    "12ae50b187c1433c0f028edcc4c2838b6a9bfc226ca4b4530e7a4ccee1bfa2a3"
    "d396ae5a3fb512384b2fdd851f784a65e03f2c4fbe11a53c7777c023462239dd"
    "6f7521a3f6c7d5dd3ec9b3f233773d4b46d23cc375eb198c63301c21801f6520"
    "bcfb7966fc49b393f0061d974a2706df8c4a9449f11d7f3d2dcbb90c6b877045"
    "636e7c0c0fe4eb0f697545460c806910d2c355f1d253bc9d2452aaa549e27a1f"
    "ac7cf4ed77f322e8fa894b6a83810a34b361901751a6f5eb65a0326e07de7c12"
    "16ccce2d0193f958bb3850a833f7ae432b65bc5a53975c155aa4bcb4f7b2c4e5"
    "4df16efaf6ddea94e2c50b4cd1dfe06017e0e9d02900cffe1935e0491d77ffb4"
    "fdf85290fdd893d577b1131a610ef6a5c32b2ee0293617a37cbb08b847741c3b"
    "8017c25ca9052ca1079d8b78aebd47876d330a30f6a8c6d61dd1ab5589329de7"
    "14d19d61370f8149748c72f132f0fc99f34d766c6938597040d8f9e2bb522ff9"
    "9c63a344d6a2ae8aa8e51b7b90a4a806105fcbca31506c446151adfeceb51b91"
    "abfe43960977c87471cf9ad4074d30e10d6a7f03c63bd5d4317f68ff325ba3bd"
    "80bf4dc8b52a0ba031758022eb025cdd770b44d6d6cf0670f4e990b22347a7db"
    "848265e3e5eb72dfe8299ad7481a408322cac55786e52f633b2fb6b614eaed18"
    "d703dd84045a274ae8bfa73379661388d6991fe39b0d93debb41700b41f90a15"
    "c4d526250235ddcd6776fc77bc97e7a417ebcb31600d01e57f32162a8560cacc"
    "7e27a096d37a1a86952ec71bd89a3e9a30a2a26162984d7740f81193e8238e61"
    "f6b5b984d4d3dfa033c1bb7e4f0037febf406d91c0dccf32acf423cfa1e70710"
    "10d3f270121b493ce85054ef58bada42310138fe081adb04e2bd901f2f13458b"
    "3d6758158197107c14ebb193230cd1157380aa79cae1374a7c1e5bbcb80ee23e"
    "06ebfde206bfb0fcbc0edc4ebec309661bdd908d532eb0c6adc38b7ca7331dce"
    "8dfce39ab71e7c32d318d136b6100671a1ae6a6600e3899f31f0eed19e3417d1"
    "34b90c9058f8632c798d4490da4987307cba922d61c39805d072b589bd52fdf1"
    "e86215c2d54e6670e07383a27bbffb5addf47d66aa85a0c6f9f32e59d85a44dd"
    "5d3b22dc2be80919b490437ae4f36a0ae55edf1d0b5cb4e9a3ecabee93dfc6e3"
    "8d209d0fa6536d27a5d6fbb17641cde27525d61093f1b28072d111b2b4ae5f89"
    "d5974ee12e5cf7d5da4d6a31123041f33e61407e76cffcdcfd7e19ba58cf4b53"
    "6f4c4938ae79324dc402894b44faf8afbab35282ab659d13c93f70412e85cb19"
    "9a37ddec600545473cfb5a05e08d0b209973b2172b4d21fb69745a262ccde96b"
    "a18b2faa745b6fe189cf772a9f84cbfc";

static const char V1_SERVER_PACKET[] =
    "cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a"
    "5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3"
    "dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84"
    "022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4"
    "2158407dd074ee";

static const char V2_SERVER_PACKET[] =
    "dc6b3343cf0008f067a5502a4262b5004075d92faaf16f05d8a4398c47089698"
    "baeea26b91eb761d9b89237bbf87263017915358230035f7fd3945d88965cf17"
    "f9af6e16886c61bfc703106fbaf3cb4cfa52382dd16a393e42757507698075b2"
    "c984c707f0a0812d8cd5a6881eaf21ceda98f4bd23f6fe1a3e2c43edd9ce7ca8"
    "4bed8521e2e140";

struct initial_vec {
    uint32_t version;
    const char *client_secret, *client_key, *client_iv, *client_hp;
    const char *server_secret, *server_key, *server_iv, *server_hp;
    const char *client_hdr, *client_packet, *server_hdr, *server_packet;
};

static const struct initial_vec VECS[2] = {
    {VEGA_QUIC_V1, "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea",
     "1f369613dd76d5467730efcbe3b1a22d", "fa044b2f42a3fd3b46fb255c",
     "9f50449e04a0e810283a1e9933adedd2",
     "3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b",
     "cf3a5331653c364c88f0f379b6067e37", "0ac1493ca1905853b0bba03e",
     "c206b8d9b9f0f37644430b490eeaa314", "c300000001088394c8f03e5157080000449e00000002",
     V1_CLIENT_PACKET, "c1000000010008f067a5502a4262b50040750001", V1_SERVER_PACKET},
    {VEGA_QUIC_V2, "14ec9d6eb9fd7af83bf5a668bc17a7e283766aade7ecd0891f70f9ff7f4bf47b",
     "8b1a0bc121284290a29e0971b5cd045d", "91f73e2351d8fa91660e909f",
     "45b95e15235d6f45a6b19cbcb0294ba9",
     "0263db1782731bf4588e7e4d93b7463907cb8cd8200b5da55a8bd488eafc37c1",
     "82db637861d55e1d011f19ea71d5d2a7", "dd13c276499c0249d3310652",
     "edf6d05c83121201b436e16877593c3a", "d36b3343cf088394c8f03e5157080000449e00000002",
     V2_CLIENT_PACKET, "d16b3343cf0008f067a5502a4262b50040750001", V2_SERVER_PACKET},
};

/* RFC 9001 A.1 / RFC 9369 A.1: secrets, keys, ivs and hp keys from the DCID. */
static void keys_vec(const struct initial_vec *v)
{
    uint8_t c[32], s[32];
    VCHECK_EQ(vega_quic_initial_secrets(v->version, DCID, 8, c, s), 0);
    CHECK_HEX(c, 32, v->client_secret);
    CHECK_HEX(s, 32, v->server_secret);
    vega_quic_key_material m;
    VCHECK_EQ(vega_quic_key_material_derive(&m, v->version, VEGA_CRYPTO_AES_128_GCM, c, 32), 0);
    VCHECK_EQ(m.key_len, 16);
    CHECK_HEX(m.key, 16, v->client_key);
    CHECK_HEX(m.iv, 12, v->client_iv);
    CHECK_HEX(m.hp, 16, v->client_hp);
    VCHECK_EQ(vega_quic_key_material_derive(&m, v->version, VEGA_CRYPTO_AES_128_GCM, s, 32), 0);
    CHECK_HEX(m.key, 16, v->server_key);
    CHECK_HEX(m.iv, 12, v->server_iv);
    CHECK_HEX(m.hp, 16, v->server_hp);
}

VTEST(rfc9001_a1_keys)
{
    keys_vec(&VECS[0]);
}

VTEST(rfc9369_a1_keys)
{
    keys_vec(&VECS[1]);
}

/* The packet of hl header bytes (already protected: want, n bytes) protected again with
 * vega__quic_packet_protect_ext, the spans' bytes left at their source (as a stream's are) and
 * the packet's payload bytes there garbage: the same bytes, byte for byte. */
static void ext_matches(vega_quic_keys *k, const uint8_t *hdr, size_t hl, uint64_t pn,
                        const uint8_t *payload, size_t payload_len,
                        const struct vega__quic_ext *ext, size_t next, const uint8_t *want,
                        vega_ssize n)
{
    static uint8_t pkt[1500];
    memcpy(pkt, hdr, hl);
    memcpy(pkt + hl, payload, payload_len);
    for (size_t i = 0; i < next; i++)
        memset(pkt + hl + ext[i].at, 0xee, ext[i].len);
    VCHECK_EQ(vega__quic_packet_protect_ext(k, pkt, sizeof pkt, hl, pn, payload_len, ext, next), n);
    VCHECK(memcmp(pkt, want, (size_t)n) == 0);
}

/* Spans at the start, inside and at the end of a payload of len bytes (some empty when it is
 * short), in place between them. */
static size_t three_spans(const uint8_t *payload, size_t len, struct vega__quic_ext *ext)
{
    size_t a = len / 5, b = len / 3, c = len / 2, d = len - len / 7;
    ext[0] = (struct vega__quic_ext){payload, 0, (uint32_t)a};
    ext[1] = (struct vega__quic_ext){payload + b, (uint32_t)b, (uint32_t)(c - b)};
    ext[2] = (struct vega__quic_ext){payload + d, (uint32_t)d, (uint32_t)(len - d)};
    return 3;
}

/* Builds, protects and compares a packet, then parses and unprotects it back. */
static void packet_vec(uint32_t version, bool server, const vega_quic_hdr *h, size_t pn_len,
                       uint64_t pn, const uint8_t *payload, size_t payload_len, const char *hdr_hex,
                       const char *packet_hex)
{
    static uint8_t pkt[1500];
    vega_quic_keys *k;
    VCHECK_EQ(vega_quic_keys_new_initial(&k, version, DCID, 8, server), 0);
    vega_ssize hl = vega_quic_hdr_write(pkt, sizeof pkt, h, pn_len, pn);
    VCHECK(hl > 0);
    VCHECK_EQ(vega_quic_hdr_len(h, pn_len), hl);
    CHECK_HEX(pkt, (size_t)hl, hdr_hex);
    memcpy(pkt + hl, payload, payload_len);
    vega_ssize n = vega_quic_packet_protect(k, pkt, sizeof pkt, (size_t)hl, pn, payload_len);
    VCHECK_EQ(n, hl + (vega_ssize)payload_len + 16);
    CHECK_HEX(pkt, (size_t)n, packet_hex);
    {
        static uint8_t hdr[64];
        VCHECK_EQ(vega_quic_hdr_write(hdr, sizeof hdr, h, pn_len, pn), hl);
        struct vega__quic_ext ext[VEGA__QUIC_EXT_MAX];
        size_t ne = three_spans(payload, payload_len, ext);
        ext_matches(k, hdr, (size_t)hl, pn, payload, payload_len, ext, ne, pkt, n);
        ext[0] = (struct vega__quic_ext){payload, 0, (uint32_t)payload_len}; /* all of it */
        ext_matches(k, hdr, (size_t)hl, pn, payload, payload_len, ext, 1, pkt, n);
    }

    /* The receiving side: parse, then remove protection with the same keys. */
    vega_quic_hdr ph;
    VCHECK_EQ(vega_quic_hdr_parse(&ph, pkt, (size_t)n, 0), 0);
    VCHECK_EQ(ph.type, VEGA_QUIC_PKT_INITIAL);
    VCHECK(ph.version == version);
    VCHECK_EQ(ph.pkt_len, n);
    VCHECK_EQ(ph.pn_offset, hl - (vega_ssize)pn_len);
    VCHECK(ph.dcid_len == h->dcid_len &&
           (!h->dcid_len || memcmp(ph.dcid, h->dcid, h->dcid_len) == 0));
    VCHECK(ph.scid_len == h->scid_len &&
           (!h->scid_len || memcmp(ph.scid, h->scid, h->scid_len) == 0));
    vega_quic_unprotected u;
    uint64_t err = 0;
    VCHECK_EQ(
        vega_quic_packet_unprotect(k, pkt, ph.pkt_len, ph.pn_offset, (int64_t)pn - 1, &u, &err), 0);
    VCHECK(u.pn == pn);
    VCHECK_EQ(u.pn_len, pn_len);
    VCHECK_EQ(u.payload_off, hl);
    VCHECK_EQ(u.payload_len, payload_len);
    VCHECK(memcmp(pkt + u.payload_off, payload, payload_len) == 0);
    CHECK_HEX(pkt, (size_t)hl, hdr_hex);
    vega_quic_keys_free(k);
}

static void client_initial(const struct initial_vec *v)
{
    uint8_t payload[1162] = {0};
    size_t n = vtest_unhex(CLIENT_CRYPTO, payload, sizeof payload);
    VCHECK_EQ(n, 245);
    vega_quic_hdr h = {.type = VEGA_QUIC_PKT_INITIAL,
                       .version = v->version,
                       .dcid = DCID,
                       .dcid_len = 8,
                       .length = 1182};
    packet_vec(v->version, false, &h, 4, 2, payload, sizeof payload, v->client_hdr,
               v->client_packet);
}

static void server_initial(const struct initial_vec *v)
{
    uint8_t payload[128];
    size_t n = vtest_unhex(SERVER_PAYLOAD, payload, sizeof payload);
    vega_quic_hdr h = {.type = VEGA_QUIC_PKT_INITIAL,
                       .version = v->version,
                       .scid = SCID,
                       .scid_len = 8,
                       .length = 2 + n + 16};
    packet_vec(v->version, true, &h, 2, 1, payload, n, v->server_hdr, v->server_packet);
}

VTEST(rfc9001_a2_client_initial)
{
    client_initial(&VECS[0]);
}

VTEST(rfc9369_a2_client_initial)
{
    client_initial(&VECS[1]);
}

VTEST(rfc9001_a3_server_initial)
{
    server_initial(&VECS[0]);
}

VTEST(rfc9369_a3_server_initial)
{
    server_initial(&VECS[1]);
}

/* A.4: the Retry packet (token "token", new SCID) answering the A.2 client Initial. */
static void retry_vec(uint32_t version, const char *want)
{
    uint8_t out[128], tag[16];
    vega_quic_hdr h = {.type = VEGA_QUIC_PKT_RETRY,
                       .version = version,
                       .scid = SCID,
                       .scid_len = 8,
                       .token = (const uint8_t *)"token",
                       .token_len = 5};
    vega_ssize n = vega_quic_retry_write(out, sizeof out, &h, 0x0f, DCID, 8);
    VCHECK_EQ(n, 36);
    CHECK_HEX(out, (size_t)n, want);
    VCHECK_EQ(vega_quic_retry_write(out, 35, &h, 0x0f, DCID, 8), VEGA_ERR_NOBUF);

    vega_quic_hdr ph;
    VCHECK_EQ(vega_quic_hdr_parse(&ph, out, (size_t)n, 0), 0);
    VCHECK_EQ(ph.type, VEGA_QUIC_PKT_RETRY);
    VCHECK_EQ(ph.token_len, 5);
    VCHECK(memcmp(ph.token, "token", 5) == 0);
    VCHECK(ph.retry_tag == out + 20);
    VCHECK_EQ(vega_quic_retry_verify(&ph, out, DCID, 8), 0);
    VCHECK_EQ(vega_quic_retry_tag(version, DCID, 8, out, 20, tag), 0);
    VCHECK(memcmp(tag, out + 20, 16) == 0);
    /* Another original DCID, or any flipped bit, fails. */
    VCHECK_EQ(vega_quic_retry_verify(&ph, out, DCID, 7), VEGA_ERR_CRYPTO_AUTH);
    for (size_t i = 0; i < (size_t)n; i++) {
        out[i] ^= 0x10;
        if (vega_quic_hdr_parse(&ph, out, (size_t)n, 0) == 0 && ph.type == VEGA_QUIC_PKT_RETRY)
            VCHECK_EQ(vega_quic_retry_verify(&ph, out, DCID, 8), VEGA_ERR_CRYPTO_AUTH);
        out[i] ^= 0x10;
    }
    /* The other version's key does not verify it. */
    VCHECK_EQ(vega_quic_hdr_parse(&ph, out, (size_t)n, 0), 0);
    ph.version = version == VEGA_QUIC_V1 ? VEGA_QUIC_V2 : VEGA_QUIC_V1;
    VCHECK_EQ(vega_quic_retry_verify(&ph, out, DCID, 8), VEGA_ERR_CRYPTO_AUTH);
}

VTEST(rfc9001_a4_retry)
{
    retry_vec(VEGA_QUIC_V1,
              "ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba");
}

VTEST(rfc9369_a4_retry)
{
    retry_vec(VEGA_QUIC_V2,
              "cf6b3343cf0008f067a5502a4262b5746f6b656ec8646ce8bfe33952d955543665dcc7b6");
}

/* A.5: a ChaCha20-Poly1305 short header packet (packet number 654360564 in 3 bytes, payload
 * one PING), its keys and the key update secret. */
static void chacha_vec(uint32_t version, const char *key, const char *iv, const char *hp,
                       const char *ku, const char *packet)
{
    uint8_t secret[32], pkt[64], next[32];
    vtest_unhex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b", secret, 32);
    vega_quic_key_material m;
    VCHECK_EQ(vega_quic_key_material_derive(&m, version, VEGA_CRYPTO_CHACHA20_POLY1305, secret, 32),
              0);
    VCHECK_EQ(m.key_len, 32);
    CHECK_HEX(m.key, 32, key);
    CHECK_HEX(m.iv, 12, iv);
    CHECK_HEX(m.hp, 32, hp);
    VCHECK_EQ(vega_quic_secret_update(version, VEGA_CRYPTO_CHACHA20_POLY1305, secret, 32, next), 0);
    CHECK_HEX(next, 32, ku);

    vega_quic_keys *k;
    VCHECK_EQ(vega_quic_keys_new(&k, version, VEGA_CRYPTO_CHACHA20_POLY1305, secret, 32), 0);
    vega_quic_hdr h = {.type = VEGA_QUIC_PKT_1RTT};
    const uint64_t pn = 654360564;
    VCHECK_EQ(vega_quic_pn_len(pn, (int64_t)pn - 100), 1);
    VCHECK_EQ(vega_quic_hdr_write(pkt, sizeof pkt, &h, 3, pn), 4);
    CHECK_HEX(pkt, 4, "4200bff4");
    pkt[4] = 0x01;
    vega_ssize n = vega_quic_packet_protect(k, pkt, sizeof pkt, 4, pn, 1);
    VCHECK_EQ(n, 21);
    CHECK_HEX(pkt, 21, packet);
    {
        static const uint8_t ping = 0x01;
        uint8_t hdr[4];
        VCHECK_EQ(vega_quic_hdr_write(hdr, sizeof hdr, &h, 3, pn), 4);
        struct vega__quic_ext ext = {&ping, 0, 1};
        ext_matches(k, hdr, 4, pn, &ping, 1, &ext, 1, pkt, n);
    }

    vega_quic_hdr ph;
    VCHECK_EQ(vega_quic_hdr_parse(&ph, pkt, 21, 0), 0);
    VCHECK_EQ(ph.type, VEGA_QUIC_PKT_1RTT);
    VCHECK_EQ(ph.pn_offset, 1);
    vega_quic_unprotected u;
    VCHECK_EQ(vega_quic_packet_unprotect(k, pkt, 21, 1, 654360563, &u, NULL), 0);
    VCHECK(u.pn == pn);
    VCHECK_EQ(u.pn_len, 3);
    VCHECK_EQ(u.first, 0x42);
    VCHECK_EQ(u.payload_len, 1);
    VCHECK_EQ(pkt[u.payload_off], 0x01);
    vega_quic_keys_free(k);
}

VTEST(rfc9001_a5_chacha20_short)
{
    chacha_vec(VEGA_QUIC_V1, "c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8",
               "e0459b3474bdd0e44a41c144",
               "25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4",
               "1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9",
               "4cfe4189655e5cd55c41f69080575d7999c25a5bfb");
}

VTEST(rfc9369_a5_chacha20_short)
{
    chacha_vec(VEGA_QUIC_V2, "3bfcddd72bcf02541d7fa0dd1f5f9eeea817e09a6963a0e6c7df0f9a1bab90f2",
               "a6b5bc6ab7dafce30ffff5dd",
               "d659760d2ba434a226fd37b35c69e2da8211d10c4f12538787d65645d5d1b8e2",
               "c69374c49e3d2a9466fa689e49d476db5d0dfbc87d32ceeaa6343fd0ae4c7d88",
               "5558b1c60ae7b6b932bc27d786f4bc2bb20f2162ba");
}

/* AES-256-GCM (SHA-384 secrets) round-trips, any damage fails authentication and leaves the
 * header as received, and the other side's keys do not open it. */
VTEST(aes256_roundtrip_and_forgery)
{
    uint8_t secret[48], pkt[256], orig[256];
    for (int i = 0; i < 48; i++)
        secret[i] = (uint8_t)i;
    vega_quic_keys *k, *other;
    VCHECK_EQ(vega_quic_keys_new(&k, VEGA_QUIC_V1, VEGA_CRYPTO_AES_256_GCM, secret, 48), 0);
    VCHECK_EQ(vega_quic_keys_new(&other, VEGA_QUIC_V1, VEGA_CRYPTO_AES_256_GCM, secret, 32),
              -EINVAL);
    VCHECK(other == NULL);
    VCHECK_EQ(vega_quic_keys_new(&other, VEGA_QUIC_V2, VEGA_CRYPTO_AES_256_GCM, secret, 48), 0);
    uint8_t cid[4] = {1, 2, 3, 4};
    vega_quic_hdr h = {
        .type = VEGA_QUIC_PKT_1RTT, .dcid = cid, .dcid_len = 4, .key_phase = true, .spin = true};
    vega_ssize hl = vega_quic_hdr_write(pkt, sizeof pkt, &h, 2, 0x1234);
    VCHECK_EQ(hl, 7);
    VCHECK_EQ(pkt[0], 0x40 | 0x20 | 0x04 | 1);
    memset(pkt + hl, 0xab, 40);
    /* Too little to sample: pn (2) + payload (1) < 4. */
    VCHECK_EQ(vega_quic_packet_protect(k, pkt, sizeof pkt, (size_t)hl, 0x1234, 1), -EINVAL);
    VCHECK_EQ(vega_quic_packet_protect(k, pkt, (size_t)hl + 40 + 15, (size_t)hl, 0x1234, 40),
              VEGA_ERR_NOBUF);
    vega_ssize n = vega_quic_packet_protect(k, pkt, sizeof pkt, (size_t)hl, 0x1234, 40);
    VCHECK_EQ(n, hl + 40 + 16);
    memcpy(orig, pkt, (size_t)n);
    vega_quic_unprotected u;
    VCHECK_EQ(vega_quic_packet_unprotect(other, pkt, (size_t)n, 5, 0x1200, &u, NULL),
              VEGA_ERR_CRYPTO_AUTH);
    VCHECK(memcmp(pkt, orig, 5) == 0 && memcmp(pkt + 5, orig + 5, 2) == 0);
    for (size_t i = 0; i < (size_t)n; i += 3) {
        memcpy(pkt, orig, (size_t)n);
        pkt[i] ^= 0x01;
        int rc = vega_quic_packet_unprotect(k, pkt, (size_t)n, 5, 0x1200, &u, NULL);
        /* A flip in the top bits of byte 0 is outside the AAD-protected mask but inside the
         * AAD, so it too fails; nothing ever authenticates. */
        VCHECK_EQ(rc, VEGA_ERR_CRYPTO_AUTH);
    }
    memcpy(pkt, orig, (size_t)n);
    VCHECK_EQ(vega_quic_packet_unprotect(k, pkt, (size_t)n, 5, 0x1200, &u, NULL), 0);
    VCHECK(u.pn == 0x1234);
    VCHECK_EQ(u.first, 0x40 | 0x20 | 0x04 | 1);
    VCHECK_EQ(u.payload_len, 40);
    /* Too short to sample at all. */
    VCHECK_EQ(vega_quic_packet_unprotect(k, pkt, 5 + 19, 5, 0, &u, NULL), VEGA_ERR_PROTO);
    vega_quic_keys_free(k);
    vega_quic_keys_free(other);
    vega_quic_keys_free(NULL);
}

/* RFC 9000 §17.3.1: reserved bits set under protection are a PROTOCOL_VIOLATION once the
 * packet authenticates. */
VTEST(reserved_bits_protocol_violation)
{
    vega_quic_keys *k;
    VCHECK_EQ(vega_quic_keys_new_initial(&k, VEGA_QUIC_V1, DCID, 8, false), 0);
    uint8_t pkt[128];
    vega_quic_hdr h = {.type = VEGA_QUIC_PKT_HANDSHAKE,
                       .version = VEGA_QUIC_V1,
                       .dcid = DCID,
                       .dcid_len = 8,
                       .length = 1 + 30 + 16};
    vega_ssize hl = vega_quic_hdr_write(pkt, sizeof pkt, &h, 1, 7);
    VCHECK(hl > 0);
    pkt[0] |= 0x08; /* a reserved bit */
    memset(pkt + hl, 0x01, 30);
    vega_ssize n = vega_quic_packet_protect(k, pkt, sizeof pkt, (size_t)hl, 7, 30);
    VCHECK(n > 0);
    vega_quic_hdr ph;
    VCHECK_EQ(vega_quic_hdr_parse(&ph, pkt, (size_t)n, 0), 0);
    VCHECK_EQ(ph.type, VEGA_QUIC_PKT_HANDSHAKE);
    vega_quic_unprotected u;
    uint64_t err = 0;
    VCHECK_EQ(vega_quic_packet_unprotect(k, pkt, ph.pkt_len, ph.pn_offset, -1, &u, &err),
              VEGA_ERR_PROTO);
    VCHECK_EQ(err, VEGA_QUIC_PROTOCOL_VIOLATION);
    vega_quic_keys_free(k);
}

VTEST(bad_arguments)
{
    uint8_t c[32], tag[16], big[VEGA_QUIC_RETRY_MAX_LEN] = {0};
    uint8_t cid21[21] = {0};
    vega_quic_keys *k = (vega_quic_keys *)1;
    VCHECK_EQ(vega_quic_initial_secrets(0xff00001d, DCID, 8, c, NULL), -EINVAL);
    VCHECK_EQ(vega_quic_initial_secrets(VEGA_QUIC_V1, cid21, 21, c, NULL), -EINVAL);
    VCHECK_EQ(vega_quic_keys_new_initial(&k, 7, DCID, 8, true), -EINVAL);
    VCHECK(k == NULL);
    VCHECK_EQ(vega_quic_keys_new(&k, VEGA_QUIC_V1, 99, c, 32), -EINVAL);
    VCHECK_EQ(vega_quic_retry_tag(VEGA_QUIC_V1, cid21, 21, big, 10, tag), -EINVAL);
    VCHECK_EQ(vega_quic_retry_tag(VEGA_QUIC_V1, DCID, 8, big, sizeof big, tag), -EINVAL);
    vega_quic_hdr h = {.type = VEGA_QUIC_PKT_RETRY, .version = VEGA_QUIC_V1};
    VCHECK_EQ(vega_quic_retry_write(big, sizeof big, &h, 0, DCID, 8), -EINVAL);
}

/* Spans that overlap, run past the payload, have no source or are too many are refused before
 * anything is sealed. */
VTEST(protect_ext_bad_spans)
{
    vega_quic_keys *k;
    VCHECK_EQ(vega_quic_keys_new_initial(&k, VEGA_QUIC_V1, DCID, 8, false), 0);
    uint8_t pkt[200] = {0x40, 0, 0, 0}, src[100] = {1};
    const struct vega__quic_ext overlap[2] = {{src, 0, 10}, {src, 5, 10}};
    const struct vega__quic_ext past[1] = {{src, 30, 11}};
    const struct vega__quic_ext nosrc[1] = {{NULL, 0, 10}};
    struct vega__quic_ext many[VEGA__QUIC_EXT_MAX + 1];
    for (size_t i = 0; i <= VEGA__QUIC_EXT_MAX; i++)
        many[i] = (struct vega__quic_ext){src, (uint32_t)i, 1};
    VCHECK_EQ(vega__quic_packet_protect_ext(k, pkt, sizeof pkt, 4, 1, 40, overlap, 2), -EINVAL);
    VCHECK_EQ(vega__quic_packet_protect_ext(k, pkt, sizeof pkt, 4, 1, 40, past, 1), -EINVAL);
    VCHECK_EQ(vega__quic_packet_protect_ext(k, pkt, sizeof pkt, 4, 1, 40, nosrc, 1), -EINVAL);
    VCHECK_EQ(
        vega__quic_packet_protect_ext(k, pkt, sizeof pkt, 4, 1, 40, many, VEGA__QUIC_EXT_MAX + 1),
        -EINVAL);
    VCHECK_EQ(pkt[4], 0); /* untouched */
    VCHECK_EQ(vega__quic_packet_protect_ext(k, pkt, sizeof pkt, 4, 1, 40, past, 0), 4 + 40 + 16);
    vega_quic_keys_free(k);
}
