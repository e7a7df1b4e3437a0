// Package sasl is the server side of Kafka's SASL mechanisms: PLAIN
// (RFC 4616), SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) and
// OAUTHBEARER with signed JWTs (RFC 7628, KIP-255, KIP-768). It is pure:
// it opens no sockets, reads no files and keeps no goroutines. The
// broker's connection layer runs it for SaslHandshake and SaslAuthenticate
// (KIP-152) and again on re-authentication (KIP-368).
//
// # Usage
//
// The connection layer makes one Session per exchange, after
// SaslHandshake named the mechanism:
//
//  1. Build the Session: NewPlain(users), NewScram(mech, store, cfg) or
//     NewOAuthBearer(keys, cfg). Refuse a mechanism for which Supported
//     is false with UNSUPPORTED_SASL_MECHANISM.
//  2. For each SaslAuthenticate, call Step with its auth_bytes and send
//     out back as the response's auth_bytes.
//  3. On an error, answer with the error code that its sentinel maps to
//     (ErrAuthenticationFailed and ErrMalformed: SASL_AUTHENTICATION_FAILED;
//     ErrIllegalState: ILLEGAL_SASL_STATE) and the error's message, then
//     close the connection.
//  4. When done is true, take Principal for authorization and, if
//     Lifetime is not zero, bound session_lifetime_ms by it.
//
// For example:
//
//	s := sasl.NewScram(sasl.ScramSHA256, store, sasl.Config{})
//	out, done, err := s.Step(authBytes)
//
// # Invariants
//
//   - A Session completes at most once. Every Step after completion or
//     after an error fails with ErrIllegalState.
//   - Principal is "" until done, then "User:" plus the authenticated name.
//   - Secrets, proofs and signatures are compared in constant time
//     (hmac.Equal, or subtle.ConstantTimeCompare of SHA-256 digests); no
//     error message holds bytes the client sent.
//   - PLAIN keeps only SHA-256 digests of passwords; SCRAM keeps only
//     StoredKey and ServerKey.
//   - SCRAM answers an unknown user, or a stored credential with fewer
//     than 4096 iterations, with a made-up salt and fails at the final
//     message, so the reply does not tell whether the user exists.
//   - An authorization id, when sent, must equal the authenticated name.
//   - No mechanism supports channel binding or extensions that change
//     authentication (SCRAM tokenauth, m=).
//
// # Wire formats
//
// PLAIN, one message, reply empty:
//
//	+---------+-----+---------+-----+--------+
//	| authzid | NUL | authcid | NUL | passwd |
//	+---------+-----+---------+-----+--------+
//	  optional        not empty       not empty
//
// SCRAM, two round trips (comma separated attribute=value fields; names
// escape ',' as =2C and '=' as =3D):
//
//	client-first  n,[a=authzid],n=user,r=cnonce
//	              \_ gs2 header _/\___ client-first-bare ___/
//	server-first  r=cnonce+snonce,s=base64(salt),i=iterations
//	client-final  c=base64(gs2 header),r=cnonce+snonce,p=base64(proof)
//	server-final  v=base64(ServerSignature)
//
//	AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
//	SaltedPassword  = PBKDF2-HMAC-H(password, salt, iterations)
//	ClientKey       = HMAC(SaltedPassword, "Client Key");  StoredKey = H(ClientKey)
//	ServerKey       = HMAC(SaltedPassword, "Server Key")
//	ClientProof     = ClientKey XOR HMAC(StoredKey, AuthMessage)
//	ServerSignature = HMAC(ServerKey, AuthMessage)
//
// OAUTHBEARER, one message; the reply is empty on success, or the JSON
// error, after which the client sends a lone %x01 and the exchange fails:
//
//	+-------------+------+--------------------+------+--------------------+------+
//	| n,[a=id],   | 0x01 | auth=Bearer <jwt>  | 0x01 | [key=value 0x01]*  | 0x01 |
//	+-------------+------+--------------------+------+--------------------+------+
//	  gs2 header           JWS compact form:
//	                       base64url(header).base64url(claims).base64url(signature)
//
//	error reply   {"status":"invalid_token"}
//
// The JWT must be signed with RS256/384/512, PS256/384/512 or
// ES256/384/512 by a key of the KeySet (its kid selects the key; with no
// kid, a set of one key is used; a kid the set lacks is passed to
// OAuthConfig.MissingKey, which may return a newer set), carry exp, pass
// exp/nbf/iat with the configured clock skew, and match the expected
// issuer and audience when they are configured. The principal comes from the sub claim (or
// SubClaimName); scope is optional.
//
// # Concurrency
//
// Sessions are not safe for concurrent use. PlainUsers and KeySet are
// immutable and safe for concurrent use. ScramStore implementations, the
// key set function given to NewOAuthBearer and OAuthConfig.MissingKey
// must be safe for concurrent use. The package holds no locks. Step
// blocks only while MissingKey does.
package sasl
