import Foundation
import Testing
import VaultTestSupport

@testable import Security

// Apple's raw value of each constant (SecItemConstants.c), checked one by one.
private var appleConstantValues: [(String, CFString)] {
    [
        ("class", kSecClass),
        ("genp", kSecClassGenericPassword),
        ("inet", kSecClassInternetPassword),
        ("cert", kSecClassCertificate),
        ("keys", kSecClassKey),
        ("idnt", kSecClassIdentity),
        ("pdmn", kSecAttrAccessible),
        ("accc", kSecAttrAccessControl),
        ("agrp", kSecAttrAccessGroup),
        ("cdat", kSecAttrCreationDate),
        ("mdat", kSecAttrModificationDate),
        ("desc", kSecAttrDescription),
        ("icmt", kSecAttrComment),
        ("crtr", kSecAttrCreator),
        ("type", kSecAttrType),
        ("labl", kSecAttrLabel),
        ("invi", kSecAttrIsInvisible),
        ("nega", kSecAttrIsNegative),
        ("acct", kSecAttrAccount),
        ("svce", kSecAttrService),
        ("gena", kSecAttrGeneric),
        ("sdmn", kSecAttrSecurityDomain),
        ("srvr", kSecAttrServer),
        ("ptcl", kSecAttrProtocol),
        ("atyp", kSecAttrAuthenticationType),
        ("port", kSecAttrPort),
        ("path", kSecAttrPath),
        ("sync", kSecAttrSynchronizable),
        ("vwht", kSecAttrSyncViewHint),
        ("persistref", kSecAttrPersistentReference),
        ("tkid", kSecAttrTokenID),
        ("subj", kSecAttrSubject),
        ("issr", kSecAttrIssuer),
        ("slnr", kSecAttrSerialNumber),
        ("skid", kSecAttrSubjectKeyID),
        ("pkhh", kSecAttrPublicKeyHash),
        ("ctyp", kSecAttrCertificateType),
        ("cenc", kSecAttrCertificateEncoding),
        ("kcls", kSecAttrKeyClass),
        ("klbl", kSecAttrApplicationLabel),
        ("perm", kSecAttrIsPermanent),
        ("sens", kSecAttrIsSensitive),
        ("extr", kSecAttrIsExtractable),
        ("atag", kSecAttrApplicationTag),
        ("type", kSecAttrKeyType),
        ("bsiz", kSecAttrKeySizeInBits),
        ("esiz", kSecAttrEffectiveKeySize),
        ("encr", kSecAttrCanEncrypt),
        ("decr", kSecAttrCanDecrypt),
        ("drve", kSecAttrCanDerive),
        ("sign", kSecAttrCanSign),
        ("vrfy", kSecAttrCanVerify),
        ("wrap", kSecAttrCanWrap),
        ("unwp", kSecAttrCanUnwrap),
        ("syna", kSecAttrSynchronizableAny),
        ("com.apple.token", kSecAttrAccessGroupToken),
        ("0", kSecAttrKeyClassPublic),
        ("1", kSecAttrKeyClassPrivate),
        ("2", kSecAttrKeyClassSymmetric),
        ("42", kSecAttrKeyTypeRSA),
        ("73", kSecAttrKeyTypeEC),
        ("73", kSecAttrKeyTypeECSECPrimeRandom),
        ("com.apple.setoken", kSecAttrTokenIDSecureEnclave),
        ("ak", kSecAttrAccessibleWhenUnlocked),
        ("ck", kSecAttrAccessibleAfterFirstUnlock),
        ("dk", kSecAttrAccessibleAlways),
        ("akpu", kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly),
        ("aku", kSecAttrAccessibleWhenUnlockedThisDeviceOnly),
        ("cku", kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly),
        ("dku", kSecAttrAccessibleAlwaysThisDeviceOnly),
        ("ftp ", kSecAttrProtocolFTP),
        ("ftpa", kSecAttrProtocolFTPAccount),
        ("http", kSecAttrProtocolHTTP),
        ("irc ", kSecAttrProtocolIRC),
        ("nntp", kSecAttrProtocolNNTP),
        ("pop3", kSecAttrProtocolPOP3),
        ("smtp", kSecAttrProtocolSMTP),
        ("sox ", kSecAttrProtocolSOCKS),
        ("imap", kSecAttrProtocolIMAP),
        ("ldap", kSecAttrProtocolLDAP),
        ("atlk", kSecAttrProtocolAppleTalk),
        ("afp ", kSecAttrProtocolAFP),
        ("teln", kSecAttrProtocolTelnet),
        ("ssh ", kSecAttrProtocolSSH),
        ("ftps", kSecAttrProtocolFTPS),
        ("htps", kSecAttrProtocolHTTPS),
        ("htpx", kSecAttrProtocolHTTPProxy),
        ("htsx", kSecAttrProtocolHTTPSProxy),
        ("ftpx", kSecAttrProtocolFTPProxy),
        ("smb ", kSecAttrProtocolSMB),
        ("rtsp", kSecAttrProtocolRTSP),
        ("rtsx", kSecAttrProtocolRTSPProxy),
        ("daap", kSecAttrProtocolDAAP),
        ("eppc", kSecAttrProtocolEPPC),
        ("ipp ", kSecAttrProtocolIPP),
        ("ntps", kSecAttrProtocolNNTPS),
        ("ldps", kSecAttrProtocolLDAPS),
        ("tels", kSecAttrProtocolTelnetS),
        ("imps", kSecAttrProtocolIMAPS),
        ("ircs", kSecAttrProtocolIRCS),
        ("pops", kSecAttrProtocolPOP3S),
        ("ntlm", kSecAttrAuthenticationTypeNTLM),
        ("msna", kSecAttrAuthenticationTypeMSN),
        ("dpaa", kSecAttrAuthenticationTypeDPA),
        ("rpaa", kSecAttrAuthenticationTypeRPA),
        ("http", kSecAttrAuthenticationTypeHTTPBasic),
        ("httd", kSecAttrAuthenticationTypeHTTPDigest),
        ("form", kSecAttrAuthenticationTypeHTMLForm),
        ("dflt", kSecAttrAuthenticationTypeDefault),
        ("m_Policy", kSecMatchPolicy),
        ("m_ItemList", kSecMatchItemList),
        ("m_SearchList", kSecMatchSearchList),
        ("m_Issuers", kSecMatchIssuers),
        ("m_EmailAddressIfPresent", kSecMatchEmailAddressIfPresent),
        ("m_SubjectContains", kSecMatchSubjectContains),
        ("m_CaseInsensitive", kSecMatchCaseInsensitive),
        ("m_TrustedOnly", kSecMatchTrustedOnly),
        ("m_ValidOnDate", kSecMatchValidOnDate),
        ("m_Limit", kSecMatchLimit),
        ("m_LimitOne", kSecMatchLimitOne),
        ("m_LimitAll", kSecMatchLimitAll),
        ("r_Data", kSecReturnData),
        ("r_Attributes", kSecReturnAttributes),
        ("r_Ref", kSecReturnRef),
        ("r_PersistentRef", kSecReturnPersistentRef),
        ("v_Data", kSecValueData),
        ("v_Ref", kSecValueRef),
        ("v_PersistentRef", kSecValuePersistentRef),
        ("u_ItemList", kSecUseItemList),
        ("u_OpPrompt", kSecUseOperationPrompt),
        ("u_NoAuthUI", kSecUseNoAuthenticationUI),
        ("u_AuthUI", kSecUseAuthenticationUI),
        ("u_AuthCtx", kSecUseAuthenticationContext),
        ("nleg", kSecUseDataProtectionKeychain),
        ("u_AuthUIA", kSecUseAuthenticationUIAllow),
        ("u_AuthUIF", kSecUseAuthenticationUIFail),
        ("u_AuthUIS", kSecUseAuthenticationUISkip),
        ("private", kSecPrivateKeyAttrs),
        ("public", kSecPublicKeyAttrs),
        ("spwd", kSecSharedPassword),
    ]
}

@Suite("Names and values as Apple's")
struct ConstantsTests {
    @Test("Every kSec constant has Apple's raw value (SecItemConstants.c)")
    func rawValues() {
        for (expected, constant) in appleConstantValues {
            #expect(constant as String == expected)
        }
        #expect(appleConstantValues.count >= 140)
        #expect(kSecClass as String == "class")
        #expect(kSecClassGenericPassword as String == "genp")
        #expect(kSecAttrAccount as String == "acct")
        #expect(kSecValueData as String == "v_Data")
        #expect(kSecMatchLimitOne as String == "m_LimitOne")
        #expect(kSecAttrProtocolFTP as String == "ftp ")
    }

    @Test("errSec constants have Apple's values and messages")
    func statuses() {
        let values: [(OSStatus, OSStatus)] = [
            (errSecSuccess, 0), (noErr, 0), (errSecUnimplemented, -4), (errSecIO, -36), (errSecParam, -50),
            (errSecAllocate, -108), (errSecNotAvailable, -25291), (errSecDuplicateItem, -25299),
            (errSecItemNotFound, -25300), (errSecNoSuchAttr, -25303), (errSecNoSuchClass, -25306),
            (errSecInteractionNotAllowed, -25308), (errSecDecode, -26275), (errSecMissingEntitlement, -34018),
            (errSecAuthFailed, -25293), (errSecUserCanceled, -128), (errSecWrPerm, -61), (errSecDskFull, -34),
        ]
        for (constant, value) in values {
            #expect(constant == value)
        }
        #expect(
            SecCopyErrorMessageString(errSecItemNotFound, nil)! as String
                == "The specified item could not be found in the keychain.")
        #expect(
            SecCopyErrorMessageString(errSecDuplicateItem, nil)! as String
                == "The specified item already exists in the keychain.")
        #expect(SecCopyErrorMessageString(-99_999, nil)! as String == "OSStatus -99999")
    }

    @Test("The CF names are the Foundation classes, with the CF functions over them")
    func coreFoundation() {
        let dictionary: CFDictionary = ["a": 1] as [String: Any] as CFDictionary
        #expect(dictionary.count == 1)
        #expect(kCFBooleanTrue == NSNumber(value: true))
        #expect(kCFBooleanFalse == NSNumber(value: false))
        #expect(kCFAllocatorDefault != nil)
        let error: CFError = NSError(domain: NSOSStatusErrorDomain, code: Int(errSecParam), userInfo: ["why": "test"])
        #expect(CFErrorGetDomain(error) as String == NSOSStatusErrorDomain)
        #expect(CFErrorGetCode(error) == -50)
        #expect((CFErrorCopyUserInfo(error) as? [String: Any])?["why"] as? String == "test")
        let index: CFIndex = 3
        let flags: CFOptionFlags = 1
        #expect(index == 3 && flags == 1)
    }

    @Test("SecAccessControl: Apple's flag values, hashable, errSecParam for a protection that is not one")
    func accessControl() throws {
        #expect(SecAccessControlCreateFlags.userPresence.rawValue == 1)
        #expect(SecAccessControlCreateFlags.biometryAny.rawValue == 2)
        #expect(SecAccessControlCreateFlags.biometryCurrentSet.rawValue == 8)
        #expect(SecAccessControlCreateFlags.devicePasscode.rawValue == 16)
        #expect(SecAccessControlCreateFlags.watch.rawValue == 32)
        #expect(SecAccessControlCreateFlags.or.rawValue == 1 << 14)
        #expect(SecAccessControlCreateFlags.and.rawValue == 1 << 15)
        #expect(SecAccessControlCreateFlags.privateKeyUsage.rawValue == 1 << 30)
        #expect(SecAccessControlCreateFlags.applicationPassword.rawValue == 1 << 31)

        let a = try #require(
            SecAccessControlCreateWithFlags(
                nil, kSecAttrAccessibleAfterFirstUnlock, [.biometryAny, .or, .devicePasscode], nil))
        let b = try #require(
            SecAccessControlCreateWithFlags(
                nil, kSecAttrAccessibleAfterFirstUnlock, [.biometryAny, .or, .devicePasscode], nil))
        let c = try #require(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, [], nil))
        #expect(a == b && a.hashValue == b.hashValue)
        #expect(a != c)
        #expect(Set([a, b, c]).count == 2)

        var error: Unmanaged<CFError>?
        #expect(SecAccessControlCreateWithFlags(nil, kSecClassGenericPassword, .userPresence, &error) == nil)
        let failure = try #require(error).takeRetainedValue()
        #expect(CFErrorGetCode(failure) == Int(errSecParam))
    }

    @Test("SecRandomCopyBytes fills the buffer from the system generator")
    func random() {
        var first = [UInt8](repeating: 0, count: 37)
        var second = [UInt8](repeating: 0, count: 37)
        #expect(SecRandomCopyBytes(kSecRandomDefault, first.count, &first) == errSecSuccess)
        #expect(SecRandomCopyBytes(kSecRandomDefault, second.count, &second) == errSecSuccess)
        #expect(first != second)
        #expect(first != [UInt8](repeating: 0, count: 37))
        var key = Data(count: 32)
        let status = key.withUnsafeMutableBytes { SecRandomCopyBytes(kSecRandomDefault, 32, $0.baseAddress!) }
        #expect(status == errSecSuccess)
        var nothing: UInt8 = 0
        #expect(SecRandomCopyBytes(kSecRandomDefault, 0, &nothing) == errSecSuccess)
        #expect(SecRandomCopyBytes(kSecRandomDefault, -1, &nothing) == errSecParam)
    }
}
