package command

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// This file holds the certificate authority of `sched tls`: pure functions
// from a clock and a few names to PEM bytes, so the commands in tls.go only
// read and write files. Keys are ECDSA P-256, as Nomad's quick-start CA.

// certRole is the kind of certificate `sched tls cert create` makes.
type certRole string

const (
	roleServer certRole = "server"
	roleClient certRole = "client"
	roleCLI    certRole = "cli"
)

// pemPair is a certificate and its private key, PEM-encoded.
type pemPair struct {
	Cert, Key []byte
}

// newSerial returns a random positive 128-bit serial number.
func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

// encodePair PEM-encodes a DER certificate and an ECDSA key.
func encodePair(der []byte, key *ecdsa.PrivateKey) (pemPair, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return pemPair{}, err
	}
	return pemPair{
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// subjectKeyID is the SHA-256 of the public key, cut to 20 bytes.
func subjectKeyID(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der)
	return sum[:20], nil
}

// newCA makes a self-signed CA valid from now for days, named commonName.
// With constrain, it is valid only for DNS names under domain and
// localhost (an -additional-dnsname elsewhere then fails to verify).
func newCA(now time.Time, days int, commonName, domain string, constrain bool) (pemPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return pemPair{}, err
	}
	serial, err := newSerial()
	if err != nil {
		return pemPair{}, err
	}
	skid, err := subjectKeyID(key.Public())
	if err != nil {
		return pemPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"sched"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(0, 0, days),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		SubjectKeyId:          skid,
	}
	if constrain {
		tmpl.PermittedDNSDomainsCritical = true
		tmpl.PermittedDNSDomains = []string{domain, "localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return pemPair{}, err
	}
	return encodePair(der, key)
}

// certSpec says what `sched tls cert create` signs.
type certSpec struct {
	Role   certRole
	Region string
	Domain string
	Days   int
	// ExtraDNS and ExtraIPs are added to the role's own names.
	ExtraDNS []string
	ExtraIPs []net.IP
}

// names returns the DNS names and IP addresses of s: <role>.<region>.<domain>
// and localhost, plus 127.0.0.1 for servers and clients (as Nomad's
// quick-start certificates), plus the extras.
func (s certSpec) names() ([]string, []net.IP) {
	dns := append([]string{fmt.Sprintf("%s.%s.%s", s.Role, s.Region, s.Domain), "localhost"}, s.ExtraDNS...)
	var ips []net.IP
	if s.Role != roleCLI {
		ips = append(ips, net.ParseIP("127.0.0.1"))
	}
	return dns, append(ips, s.ExtraIPs...)
}

// signCert makes a key and a certificate for s, signed by the CA in ca.
// Server and client certificates serve and dial (both extended key
// usages: a server forwards to the leader with its own certificate); a CLI
// certificate only dials.
func signCert(now time.Time, ca pemPair, s certSpec) (pemPair, error) {
	caCert, caKey, err := parseCA(ca)
	if err != nil {
		return pemPair{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return pemPair{}, err
	}
	serial, err := newSerial()
	if err != nil {
		return pemPair{}, err
	}
	dns, ips := s.names()
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if s.Role == roleCLI {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	tmpl := &x509.Certificate{
		SerialNumber:   serial,
		Subject:        pkix.Name{CommonName: dns[0]},
		NotBefore:      now.Add(-time.Minute),
		NotAfter:       now.AddDate(0, 0, s.Days),
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    usage,
		DNSNames:       dns,
		IPAddresses:    ips,
		AuthorityKeyId: caCert.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return pemPair{}, fmt.Errorf("sign: %w", err)
	}
	return encodePair(der, key)
}

// parseCA decodes a CA certificate and its key and checks they belong
// together.
func parseCA(ca pemPair) (*x509.Certificate, crypto.Signer, error) {
	cb, _ := pem.Decode(ca.Cert)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, nil, errors.New("CA certificate: no PEM CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, nil, errors.New("CA certificate: not a CA")
	}
	kb, _ := pem.Decode(ca.Key)
	if kb == nil {
		return nil, nil, errors.New("CA key: no PEM block")
	}
	var key crypto.Signer
	switch kb.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(kb.Bytes)
	case "PRIVATE KEY":
		var k any
		k, err = x509.ParsePKCS8PrivateKey(kb.Bytes)
		if s, ok := k.(crypto.Signer); ok {
			key = s
		} else if err == nil {
			err = errors.New("not a signing key")
		}
	default:
		err = fmt.Errorf("unsupported PEM block %q", kb.Type)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("CA key: %w", err)
	}
	if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		return nil, nil, errors.New("CA key does not match the CA certificate")
	}
	return cert, key, nil
}
