import Foundation

// Every `kSec*` key and value as a `CFString` with Apple's raw value. Reference: Apple's open-source
// Security framework, SecItemConstants.c (OSX/sec/Security), and the SecItem.h documentation.
// `nonisolated(unsafe)`: the strings are immutable NSString instances that are never replaced.

// MARK: Item class key and values

/// Apple's `kSecClass` ("class"): The key of an item's class.
nonisolated(unsafe) public let kSecClass: CFString = "class"
/// Apple's `kSecClassGenericPassword` ("genp"): Generic password items (implemented).
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = "genp"
/// Apple's `kSecClassInternetPassword` ("inet"): Internet password items (implemented).
nonisolated(unsafe) public let kSecClassInternetPassword: CFString = "inet"
/// Apple's `kSecClassCertificate` ("cert"): Certificate items (not implemented here: `errSecUnimplemented`).
nonisolated(unsafe) public let kSecClassCertificate: CFString = "cert"
/// Apple's `kSecClassKey` ("keys"): Cryptographic key items (not implemented here: `errSecUnimplemented`).
nonisolated(unsafe) public let kSecClassKey: CFString = "keys"
/// Apple's `kSecClassIdentity` ("idnt"): Identity items (not implemented here: `errSecUnimplemented`).
nonisolated(unsafe) public let kSecClassIdentity: CFString = "idnt"

// MARK: Attribute keys

/// Apple's `kSecAttrAccessible` ("pdmn"): When the item is readable: one of the `kSecAttrAccessible*` values.
nonisolated(unsafe) public let kSecAttrAccessible: CFString = "pdmn"
/// Apple's `kSecAttrAccessControl` ("accc"): A `SecAccessControl`; its protection sets `kSecAttrAccessible`.
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = "accc"
/// Apple's `kSecAttrAccessGroup` ("agrp"): The access group the item lives in.
nonisolated(unsafe) public let kSecAttrAccessGroup: CFString = "agrp"
/// Apple's `kSecAttrCreationDate` ("cdat"): The creation date (a date; set by the vault).
nonisolated(unsafe) public let kSecAttrCreationDate: CFString = "cdat"
/// Apple's `kSecAttrModificationDate` ("mdat"): The modification date (a date; set by the vault).
nonisolated(unsafe) public let kSecAttrModificationDate: CFString = "mdat"
/// Apple's `kSecAttrDescription` ("desc"): A user-visible description (a string).
nonisolated(unsafe) public let kSecAttrDescription: CFString = "desc"
/// Apple's `kSecAttrComment` ("icmt"): A comment (a string).
nonisolated(unsafe) public let kSecAttrComment: CFString = "icmt"
/// Apple's `kSecAttrCreator` ("crtr"): The creator, a four-character code (a number).
nonisolated(unsafe) public let kSecAttrCreator: CFString = "crtr"
/// Apple's `kSecAttrType` ("type"): The type, a four-character code (a number).
nonisolated(unsafe) public let kSecAttrType: CFString = "type"
/// Apple's `kSecAttrLabel` ("labl"): A user-visible label (a string).
nonisolated(unsafe) public let kSecAttrLabel: CFString = "labl"
/// Apple's `kSecAttrIsInvisible` ("invi"): Whether the item is invisible (a Boolean).
nonisolated(unsafe) public let kSecAttrIsInvisible: CFString = "invi"
/// Apple's `kSecAttrIsNegative` ("nega"): Whether the item has no valid password (a Boolean).
nonisolated(unsafe) public let kSecAttrIsNegative: CFString = "nega"
/// Apple's `kSecAttrAccount` ("acct"): The account name (a string); part of the primary key.
nonisolated(unsafe) public let kSecAttrAccount: CFString = "acct"
/// Apple's `kSecAttrService` ("svce"): The service (a string); part of a generic password's primary key.
nonisolated(unsafe) public let kSecAttrService: CFString = "svce"
/// Apple's `kSecAttrGeneric` ("gena"): Application data of a generic password (data).
nonisolated(unsafe) public let kSecAttrGeneric: CFString = "gena"
/// Apple's `kSecAttrSecurityDomain` ("sdmn"): The security domain of an internet password (a string).
nonisolated(unsafe) public let kSecAttrSecurityDomain: CFString = "sdmn"
/// Apple's `kSecAttrServer` ("srvr"): The server of an internet password (a string).
nonisolated(unsafe) public let kSecAttrServer: CFString = "srvr"
/// Apple's `kSecAttrProtocol` ("ptcl"): The protocol of an internet password: one of the `kSecAttrProtocol*` values.
nonisolated(unsafe) public let kSecAttrProtocol: CFString = "ptcl"
/// Apple's `kSecAttrAuthenticationType` ("atyp"): The authentication type: one of the `kSecAttrAuthenticationType*` values.
nonisolated(unsafe) public let kSecAttrAuthenticationType: CFString = "atyp"
/// Apple's `kSecAttrPort` ("port"): The port of an internet password (a number).
nonisolated(unsafe) public let kSecAttrPort: CFString = "port"
/// Apple's `kSecAttrPath` ("path"): The path of an internet password (a string).
nonisolated(unsafe) public let kSecAttrPath: CFString = "path"
/// Apple's `kSecAttrSynchronizable` ("sync"): Whether the item is synchronizable (a Boolean, or `kSecAttrSynchronizableAny` in a query).
nonisolated(unsafe) public let kSecAttrSynchronizable: CFString = "sync"
/// Apple's `kSecAttrSyncViewHint` ("vwht"): A sync view hint; accepted and ignored.
nonisolated(unsafe) public let kSecAttrSyncViewHint: CFString = "vwht"
/// Apple's `kSecAttrPersistentReference` ("persistref"): The persistent reference attribute (key items); not used by password items.
nonisolated(unsafe) public let kSecAttrPersistentReference: CFString = "persistref"
/// Apple's `kSecAttrTokenID` ("tkid"): The token of a key (key items).
nonisolated(unsafe) public let kSecAttrTokenID: CFString = "tkid"
/// Apple's `kSecAttrSubject` ("subj"): The subject of a certificate (certificate items).
nonisolated(unsafe) public let kSecAttrSubject: CFString = "subj"
/// Apple's `kSecAttrIssuer` ("issr"): The issuer of a certificate (certificate items).
nonisolated(unsafe) public let kSecAttrIssuer: CFString = "issr"
/// Apple's `kSecAttrSerialNumber` ("slnr"): The serial number of a certificate (certificate items).
nonisolated(unsafe) public let kSecAttrSerialNumber: CFString = "slnr"
/// Apple's `kSecAttrSubjectKeyID` ("skid"): The subject key ID of a certificate (certificate items).
nonisolated(unsafe) public let kSecAttrSubjectKeyID: CFString = "skid"
/// Apple's `kSecAttrPublicKeyHash` ("pkhh"): The public key hash of a certificate (certificate items).
nonisolated(unsafe) public let kSecAttrPublicKeyHash: CFString = "pkhh"
/// Apple's `kSecAttrCertificateType` ("ctyp"): The certificate type (certificate items).
nonisolated(unsafe) public let kSecAttrCertificateType: CFString = "ctyp"
/// Apple's `kSecAttrCertificateEncoding` ("cenc"): The certificate encoding (certificate items).
nonisolated(unsafe) public let kSecAttrCertificateEncoding: CFString = "cenc"
/// Apple's `kSecAttrKeyClass` ("kcls"): The class of a key: one of the `kSecAttrKeyClass*` values (key items).
nonisolated(unsafe) public let kSecAttrKeyClass: CFString = "kcls"
/// Apple's `kSecAttrApplicationLabel` ("klbl"): The application label of a key (key items).
nonisolated(unsafe) public let kSecAttrApplicationLabel: CFString = "klbl"
/// Apple's `kSecAttrIsPermanent` ("perm"): Whether a key is stored permanently (key items).
nonisolated(unsafe) public let kSecAttrIsPermanent: CFString = "perm"
/// Apple's `kSecAttrIsSensitive` ("sens"): Whether a key is sensitive (key items).
nonisolated(unsafe) public let kSecAttrIsSensitive: CFString = "sens"
/// Apple's `kSecAttrIsExtractable` ("extr"): Whether a key is extractable (key items).
nonisolated(unsafe) public let kSecAttrIsExtractable: CFString = "extr"
/// Apple's `kSecAttrApplicationTag` ("atag"): The application tag of a key (key items).
nonisolated(unsafe) public let kSecAttrApplicationTag: CFString = "atag"
/// Apple's `kSecAttrKeyType` ("type"): The algorithm of a key: one of the `kSecAttrKeyType*` values (key items).
nonisolated(unsafe) public let kSecAttrKeyType: CFString = "type"
/// Apple's `kSecAttrKeySizeInBits` ("bsiz"): The size of a key in bits (key items).
nonisolated(unsafe) public let kSecAttrKeySizeInBits: CFString = "bsiz"
/// Apple's `kSecAttrEffectiveKeySize` ("esiz"): The effective size of a key in bits (key items).
nonisolated(unsafe) public let kSecAttrEffectiveKeySize: CFString = "esiz"
/// Apple's `kSecAttrCanEncrypt` ("encr"): Whether a key can encrypt (key items).
nonisolated(unsafe) public let kSecAttrCanEncrypt: CFString = "encr"
/// Apple's `kSecAttrCanDecrypt` ("decr"): Whether a key can decrypt (key items).
nonisolated(unsafe) public let kSecAttrCanDecrypt: CFString = "decr"
/// Apple's `kSecAttrCanDerive` ("drve"): Whether a key can derive keys (key items).
nonisolated(unsafe) public let kSecAttrCanDerive: CFString = "drve"
/// Apple's `kSecAttrCanSign` ("sign"): Whether a key can sign (key items).
nonisolated(unsafe) public let kSecAttrCanSign: CFString = "sign"
/// Apple's `kSecAttrCanVerify` ("vrfy"): Whether a key can verify (key items).
nonisolated(unsafe) public let kSecAttrCanVerify: CFString = "vrfy"
/// Apple's `kSecAttrCanWrap` ("wrap"): Whether a key can wrap keys (key items).
nonisolated(unsafe) public let kSecAttrCanWrap: CFString = "wrap"
/// Apple's `kSecAttrCanUnwrap` ("unwp"): Whether a key can unwrap keys (key items).
nonisolated(unsafe) public let kSecAttrCanUnwrap: CFString = "unwp"

// MARK: Attribute values

/// Apple's `kSecAttrSynchronizableAny` ("syna"): In a query, matches synchronizable and non-synchronizable items.
nonisolated(unsafe) public let kSecAttrSynchronizableAny: CFString = "syna"
/// Apple's `kSecAttrAccessGroupToken` ("com.apple.token"): The access group of items on tokens.
nonisolated(unsafe) public let kSecAttrAccessGroupToken: CFString = "com.apple.token"
/// Apple's `kSecAttrKeyClassPublic` ("0"): A public key.
nonisolated(unsafe) public let kSecAttrKeyClassPublic: CFString = "0"
/// Apple's `kSecAttrKeyClassPrivate` ("1"): A private key.
nonisolated(unsafe) public let kSecAttrKeyClassPrivate: CFString = "1"
/// Apple's `kSecAttrKeyClassSymmetric` ("2"): A symmetric key.
nonisolated(unsafe) public let kSecAttrKeyClassSymmetric: CFString = "2"
/// Apple's `kSecAttrKeyTypeRSA` ("42"): An RSA key.
nonisolated(unsafe) public let kSecAttrKeyTypeRSA: CFString = "42"
/// Apple's `kSecAttrKeyTypeEC` ("73"): An elliptic-curve key.
nonisolated(unsafe) public let kSecAttrKeyTypeEC: CFString = "73"
/// Apple's `kSecAttrKeyTypeECSECPrimeRandom` ("73"): An elliptic-curve key on a SEC prime curve.
nonisolated(unsafe) public let kSecAttrKeyTypeECSECPrimeRandom: CFString = "73"
/// Apple's `kSecAttrTokenIDSecureEnclave` ("com.apple.setoken"): The Secure Enclave token.
nonisolated(unsafe) public let kSecAttrTokenIDSecureEnclave: CFString = "com.apple.setoken"

// MARK: Accessibility values (kSecAttrAccessible)

/// Apple's `kSecAttrAccessibleWhenUnlocked` ("ak"): Readable while unlocked; Apple's default.
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlocked: CFString = "ak"
/// Apple's `kSecAttrAccessibleAfterFirstUnlock` ("ck"): Readable after the first unlock; what background services use.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
/// Apple's `kSecAttrAccessibleAlways` ("dk"): Always readable (deprecated by Apple).
nonisolated(unsafe) public let kSecAttrAccessibleAlways: CFString = "dk"
/// Apple's `kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly` ("akpu"): Readable while unlocked, only with a passcode set, never migrated.
nonisolated(unsafe) public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"
/// Apple's `kSecAttrAccessibleWhenUnlockedThisDeviceOnly` ("aku"): Readable while unlocked, never migrated.
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
/// Apple's `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly` ("cku"): Readable after the first unlock, never migrated.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
/// Apple's `kSecAttrAccessibleAlwaysThisDeviceOnly` ("dku"): Always readable, never migrated (deprecated by Apple).
nonisolated(unsafe) public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = "dku"

// MARK: Protocol values (kSecAttrProtocol)

/// Apple's `kSecAttrProtocolFTP` ("ftp "): The FTP protocol.
nonisolated(unsafe) public let kSecAttrProtocolFTP: CFString = "ftp "
/// Apple's `kSecAttrProtocolFTPAccount` ("ftpa"): The FTP account protocol.
nonisolated(unsafe) public let kSecAttrProtocolFTPAccount: CFString = "ftpa"
/// Apple's `kSecAttrProtocolHTTP` ("http"): The HTTP protocol.
nonisolated(unsafe) public let kSecAttrProtocolHTTP: CFString = "http"
/// Apple's `kSecAttrProtocolIRC` ("irc "): The IRC protocol.
nonisolated(unsafe) public let kSecAttrProtocolIRC: CFString = "irc "
/// Apple's `kSecAttrProtocolNNTP` ("nntp"): The NNTP protocol.
nonisolated(unsafe) public let kSecAttrProtocolNNTP: CFString = "nntp"
/// Apple's `kSecAttrProtocolPOP3` ("pop3"): The POP3 protocol.
nonisolated(unsafe) public let kSecAttrProtocolPOP3: CFString = "pop3"
/// Apple's `kSecAttrProtocolSMTP` ("smtp"): The SMTP protocol.
nonisolated(unsafe) public let kSecAttrProtocolSMTP: CFString = "smtp"
/// Apple's `kSecAttrProtocolSOCKS` ("sox "): The SOCKS protocol.
nonisolated(unsafe) public let kSecAttrProtocolSOCKS: CFString = "sox "
/// Apple's `kSecAttrProtocolIMAP` ("imap"): The IMAP protocol.
nonisolated(unsafe) public let kSecAttrProtocolIMAP: CFString = "imap"
/// Apple's `kSecAttrProtocolLDAP` ("ldap"): The LDAP protocol.
nonisolated(unsafe) public let kSecAttrProtocolLDAP: CFString = "ldap"
/// Apple's `kSecAttrProtocolAppleTalk` ("atlk"): The AppleTalk protocol.
nonisolated(unsafe) public let kSecAttrProtocolAppleTalk: CFString = "atlk"
/// Apple's `kSecAttrProtocolAFP` ("afp "): The AFP protocol.
nonisolated(unsafe) public let kSecAttrProtocolAFP: CFString = "afp "
/// Apple's `kSecAttrProtocolTelnet` ("teln"): The Telnet protocol.
nonisolated(unsafe) public let kSecAttrProtocolTelnet: CFString = "teln"
/// Apple's `kSecAttrProtocolSSH` ("ssh "): The SSH protocol.
nonisolated(unsafe) public let kSecAttrProtocolSSH: CFString = "ssh "
/// Apple's `kSecAttrProtocolFTPS` ("ftps"): The FTP over TLS protocol.
nonisolated(unsafe) public let kSecAttrProtocolFTPS: CFString = "ftps"
/// Apple's `kSecAttrProtocolHTTPS` ("htps"): The HTTPS protocol.
nonisolated(unsafe) public let kSecAttrProtocolHTTPS: CFString = "htps"
/// Apple's `kSecAttrProtocolHTTPProxy` ("htpx"): The HTTP proxy protocol.
nonisolated(unsafe) public let kSecAttrProtocolHTTPProxy: CFString = "htpx"
/// Apple's `kSecAttrProtocolHTTPSProxy` ("htsx"): The HTTPS proxy protocol.
nonisolated(unsafe) public let kSecAttrProtocolHTTPSProxy: CFString = "htsx"
/// Apple's `kSecAttrProtocolFTPProxy` ("ftpx"): The FTP proxy protocol.
nonisolated(unsafe) public let kSecAttrProtocolFTPProxy: CFString = "ftpx"
/// Apple's `kSecAttrProtocolSMB` ("smb "): The SMB protocol.
nonisolated(unsafe) public let kSecAttrProtocolSMB: CFString = "smb "
/// Apple's `kSecAttrProtocolRTSP` ("rtsp"): The RTSP protocol.
nonisolated(unsafe) public let kSecAttrProtocolRTSP: CFString = "rtsp"
/// Apple's `kSecAttrProtocolRTSPProxy` ("rtsx"): The RTSP proxy protocol.
nonisolated(unsafe) public let kSecAttrProtocolRTSPProxy: CFString = "rtsx"
/// Apple's `kSecAttrProtocolDAAP` ("daap"): The DAAP protocol.
nonisolated(unsafe) public let kSecAttrProtocolDAAP: CFString = "daap"
/// Apple's `kSecAttrProtocolEPPC` ("eppc"): The Remote Apple Events protocol.
nonisolated(unsafe) public let kSecAttrProtocolEPPC: CFString = "eppc"
/// Apple's `kSecAttrProtocolIPP` ("ipp "): The IPP protocol.
nonisolated(unsafe) public let kSecAttrProtocolIPP: CFString = "ipp "
/// Apple's `kSecAttrProtocolNNTPS` ("ntps"): The NNTP over TLS protocol.
nonisolated(unsafe) public let kSecAttrProtocolNNTPS: CFString = "ntps"
/// Apple's `kSecAttrProtocolLDAPS` ("ldps"): The LDAP over TLS protocol.
nonisolated(unsafe) public let kSecAttrProtocolLDAPS: CFString = "ldps"
/// Apple's `kSecAttrProtocolTelnetS` ("tels"): The Telnet over TLS protocol.
nonisolated(unsafe) public let kSecAttrProtocolTelnetS: CFString = "tels"
/// Apple's `kSecAttrProtocolIMAPS` ("imps"): The IMAP over TLS protocol.
nonisolated(unsafe) public let kSecAttrProtocolIMAPS: CFString = "imps"
/// Apple's `kSecAttrProtocolIRCS` ("ircs"): The IRC over TLS protocol.
nonisolated(unsafe) public let kSecAttrProtocolIRCS: CFString = "ircs"
/// Apple's `kSecAttrProtocolPOP3S` ("pops"): The POP3 over TLS protocol.
nonisolated(unsafe) public let kSecAttrProtocolPOP3S: CFString = "pops"

// MARK: Authentication type values (kSecAttrAuthenticationType)

/// Apple's `kSecAttrAuthenticationTypeNTLM` ("ntlm"): Windows NT LAN Manager authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeNTLM: CFString = "ntlm"
/// Apple's `kSecAttrAuthenticationTypeMSN` ("msna"): Microsoft Network default authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeMSN: CFString = "msna"
/// Apple's `kSecAttrAuthenticationTypeDPA` ("dpaa"): Distributed Password authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDPA: CFString = "dpaa"
/// Apple's `kSecAttrAuthenticationTypeRPA` ("rpaa"): Remote Password authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeRPA: CFString = "rpaa"
/// Apple's `kSecAttrAuthenticationTypeHTTPBasic` ("http"): HTTP Basic authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPBasic: CFString = "http"
/// Apple's `kSecAttrAuthenticationTypeHTTPDigest` ("httd"): HTTP Digest authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPDigest: CFString = "httd"
/// Apple's `kSecAttrAuthenticationTypeHTMLForm` ("form"): HTML form authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTMLForm: CFString = "form"
/// Apple's `kSecAttrAuthenticationTypeDefault` ("dflt"): Default authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDefault: CFString = "dflt"

// MARK: Search keys and values

/// Apple's `kSecMatchPolicy` ("m_Policy"): Certificates only; accepted and ignored for passwords.
nonisolated(unsafe) public let kSecMatchPolicy: CFString = "m_Policy"
/// Apple's `kSecMatchItemList` ("m_ItemList"): A list of items to search; accepted and ignored.
nonisolated(unsafe) public let kSecMatchItemList: CFString = "m_ItemList"
/// Apple's `kSecMatchSearchList` ("m_SearchList"): A list of keychains to search; accepted and ignored.
nonisolated(unsafe) public let kSecMatchSearchList: CFString = "m_SearchList"
/// Apple's `kSecMatchIssuers` ("m_Issuers"): Certificates only; accepted and ignored for passwords.
nonisolated(unsafe) public let kSecMatchIssuers: CFString = "m_Issuers"
/// Apple's `kSecMatchEmailAddressIfPresent` ("m_EmailAddressIfPresent"): Certificates only; accepted and ignored for passwords.
nonisolated(unsafe) public let kSecMatchEmailAddressIfPresent: CFString = "m_EmailAddressIfPresent"
/// Apple's `kSecMatchSubjectContains` ("m_SubjectContains"): Certificates only; accepted and ignored for passwords.
nonisolated(unsafe) public let kSecMatchSubjectContains: CFString = "m_SubjectContains"
/// Apple's `kSecMatchCaseInsensitive` ("m_CaseInsensitive"): Case-insensitive matching; true is `errSecUnimplemented` here (matching is exact).
nonisolated(unsafe) public let kSecMatchCaseInsensitive: CFString = "m_CaseInsensitive"
/// Apple's `kSecMatchTrustedOnly` ("m_TrustedOnly"): Certificates only; accepted and ignored for passwords.
nonisolated(unsafe) public let kSecMatchTrustedOnly: CFString = "m_TrustedOnly"
/// Apple's `kSecMatchValidOnDate` ("m_ValidOnDate"): Certificates only; accepted and ignored for passwords.
nonisolated(unsafe) public let kSecMatchValidOnDate: CFString = "m_ValidOnDate"
/// Apple's `kSecMatchLimit` ("m_Limit"): How many items a search returns: `kSecMatchLimitOne` (default), `kSecMatchLimitAll`, or a number.
nonisolated(unsafe) public let kSecMatchLimit: CFString = "m_Limit"
/// Apple's `kSecMatchLimitOne` ("m_LimitOne"): Return one item (a single result).
nonisolated(unsafe) public let kSecMatchLimitOne: CFString = "m_LimitOne"
/// Apple's `kSecMatchLimitAll` ("m_LimitAll"): Return every matching item (an array).
nonisolated(unsafe) public let kSecMatchLimitAll: CFString = "m_LimitAll"

// MARK: Return keys

/// Apple's `kSecReturnData` ("r_Data"): Return the item's secret (`kSecValueData`).
nonisolated(unsafe) public let kSecReturnData: CFString = "r_Data"
/// Apple's `kSecReturnAttributes` ("r_Attributes"): Return the item's attributes as a dictionary.
nonisolated(unsafe) public let kSecReturnAttributes: CFString = "r_Attributes"
/// Apple's `kSecReturnRef` ("r_Ref"): Return a reference; for password items, the class, attributes and secret as a dictionary.
nonisolated(unsafe) public let kSecReturnRef: CFString = "r_Ref"
/// Apple's `kSecReturnPersistentRef` ("r_PersistentRef"): Return the item's persistent reference (data).
nonisolated(unsafe) public let kSecReturnPersistentRef: CFString = "r_PersistentRef"

// MARK: Value keys

/// Apple's `kSecValueData` ("v_Data"): The item's secret (data).
nonisolated(unsafe) public let kSecValueData: CFString = "v_Data"
/// Apple's `kSecValueRef` ("v_Ref"): An item reference (certificates, keys, identities); not supported for passwords.
nonisolated(unsafe) public let kSecValueRef: CFString = "v_Ref"
/// Apple's `kSecValuePersistentRef` ("v_PersistentRef"): An item's persistent reference (data), as `kSecReturnPersistentRef` gave it.
nonisolated(unsafe) public let kSecValuePersistentRef: CFString = "v_PersistentRef"

// MARK: Use keys (accepted; those about user interface have no meaning here and are ignored)

/// Apple's `kSecUseItemList` ("u_ItemList"): A list of items to use (deprecated by Apple); not supported (`errSecParam`).
nonisolated(unsafe) public let kSecUseItemList: CFString = "u_ItemList"
/// Apple's `kSecUseOperationPrompt` ("u_OpPrompt"): The prompt of an authentication dialog; ignored.
nonisolated(unsafe) public let kSecUseOperationPrompt: CFString = "u_OpPrompt"
/// Apple's `kSecUseNoAuthenticationUI` ("u_NoAuthUI"): Fail rather than show an authentication dialog (deprecated by Apple); ignored.
nonisolated(unsafe) public let kSecUseNoAuthenticationUI: CFString = "u_NoAuthUI"
/// Apple's `kSecUseAuthenticationUI` ("u_AuthUI"): Whether to show an authentication dialog; ignored.
nonisolated(unsafe) public let kSecUseAuthenticationUI: CFString = "u_AuthUI"
/// Apple's `kSecUseAuthenticationContext` ("u_AuthCtx"): An authentication context; ignored.
nonisolated(unsafe) public let kSecUseAuthenticationContext: CFString = "u_AuthCtx"
/// Apple's `kSecUseDataProtectionKeychain` ("nleg"): Use the data-protection keychain (macOS); the vault is always that; ignored.
nonisolated(unsafe) public let kSecUseDataProtectionKeychain: CFString = "nleg"
/// Apple's `kSecUseAuthenticationUIAllow` ("u_AuthUIA"): Allow authentication dialogs.
nonisolated(unsafe) public let kSecUseAuthenticationUIAllow: CFString = "u_AuthUIA"
/// Apple's `kSecUseAuthenticationUIFail` ("u_AuthUIF"): Fail where a dialog would be needed.
nonisolated(unsafe) public let kSecUseAuthenticationUIFail: CFString = "u_AuthUIF"
/// Apple's `kSecUseAuthenticationUISkip` ("u_AuthUIS"): Skip items that would need a dialog.
nonisolated(unsafe) public let kSecUseAuthenticationUISkip: CFString = "u_AuthUIS"

// MARK: Other keys

/// Apple's `kSecPrivateKeyAttrs` ("private"): Private-key attributes of a key-pair generation.
nonisolated(unsafe) public let kSecPrivateKeyAttrs: CFString = "private"
/// Apple's `kSecPublicKeyAttrs` ("public"): Public-key attributes of a key-pair generation.
nonisolated(unsafe) public let kSecPublicKeyAttrs: CFString = "public"
/// Apple's `kSecSharedPassword` ("spwd"): The password of a shared web credential.
nonisolated(unsafe) public let kSecSharedPassword: CFString = "spwd"
