import Foundation

// The `errSec*` status codes with Apple's values and the messages `SecCopyErrorMessageString` gives for
// them. Reference: Apple's Security framework header SecBase.h (the comment after each constant is
// the message).

/// errSecSuccess (0): No error.
public let errSecSuccess: OSStatus = 0
/// errSecUnimplemented (-4): Function or operation not implemented.
public let errSecUnimplemented: OSStatus = -4
/// errSecDiskFull (-34): The disk is full.
public let errSecDiskFull: OSStatus = -34
/// errSecIO (-36): I/O error.
public let errSecIO: OSStatus = -36
/// errSecOpWr (-49): File already open with write permission.
public let errSecOpWr: OSStatus = -49
/// errSecParam (-50): One or more parameters passed to a function were not valid.
public let errSecParam: OSStatus = -50
/// errSecWrPerm (-61): Write permissions error.
public let errSecWrPerm: OSStatus = -61
/// errSecAllocate (-108): Failed to allocate memory.
public let errSecAllocate: OSStatus = -108
/// errSecUserCanceled (-128): User canceled the operation.
public let errSecUserCanceled: OSStatus = -128
/// errSecBadReq (-909): Bad parameter or invalid state for operation.
public let errSecBadReq: OSStatus = -909
/// errSecInternalComponent (-2070): An internal component failed.
public let errSecInternalComponent: OSStatus = -2070
/// errSecCoreFoundationUnknown (-4960): An unknown Core Foundation error occurred.
public let errSecCoreFoundationUnknown: OSStatus = -4960
/// errSecMissingEntitlement (-34018): A required entitlement isn't present.
public let errSecMissingEntitlement: OSStatus = -34018
/// errSecRestrictedAPI (-34020): Client is restricted and is not permitted to perform this operation.
public let errSecRestrictedAPI: OSStatus = -34020
/// errSecNotAvailable (-25291): No keychain is available. You may need to restart your computer.
public let errSecNotAvailable: OSStatus = -25291
/// errSecReadOnly (-25292): This keychain cannot be modified.
public let errSecReadOnly: OSStatus = -25292
/// errSecAuthFailed (-25293): The user name or passphrase you entered is not correct.
public let errSecAuthFailed: OSStatus = -25293
/// errSecNoSuchKeychain (-25294): The specified keychain could not be found.
public let errSecNoSuchKeychain: OSStatus = -25294
/// errSecInvalidKeychain (-25295): The specified keychain is not a valid keychain file.
public let errSecInvalidKeychain: OSStatus = -25295
/// errSecDuplicateKeychain (-25296): A keychain with the same name already exists.
public let errSecDuplicateKeychain: OSStatus = -25296
/// errSecDuplicateCallback (-25297): The specified callback function is already installed.
public let errSecDuplicateCallback: OSStatus = -25297
/// errSecInvalidCallback (-25298): The specified callback function is not valid.
public let errSecInvalidCallback: OSStatus = -25298
/// errSecDuplicateItem (-25299): The specified item already exists in the keychain.
public let errSecDuplicateItem: OSStatus = -25299
/// errSecItemNotFound (-25300): The specified item could not be found in the keychain.
public let errSecItemNotFound: OSStatus = -25300
/// errSecBufferTooSmall (-25301): There is not enough memory available to use the specified item.
public let errSecBufferTooSmall: OSStatus = -25301
/// errSecDataTooLarge (-25302): This item contains information which is too large or in a format that cannot be displayed.
public let errSecDataTooLarge: OSStatus = -25302
/// errSecNoSuchAttr (-25303): The specified attribute does not exist.
public let errSecNoSuchAttr: OSStatus = -25303
/// errSecInvalidItemRef (-25304): The specified item is no longer valid. It may have been deleted from the keychain.
public let errSecInvalidItemRef: OSStatus = -25304
/// errSecInvalidSearchRef (-25305): Unable to search the current keychain.
public let errSecInvalidSearchRef: OSStatus = -25305
/// errSecNoSuchClass (-25306): The specified item does not appear to be a valid keychain item.
public let errSecNoSuchClass: OSStatus = -25306
/// errSecNoDefaultKeychain (-25307): A default keychain could not be found.
public let errSecNoDefaultKeychain: OSStatus = -25307
/// errSecInteractionNotAllowed (-25308): User interaction is not allowed.
public let errSecInteractionNotAllowed: OSStatus = -25308
/// errSecReadOnlyAttr (-25309): The specified attribute could not be modified.
public let errSecReadOnlyAttr: OSStatus = -25309
/// errSecWrongSecVersion (-25310): This keychain was created by a different version of the system software and cannot be opened.
public let errSecWrongSecVersion: OSStatus = -25310
/// errSecKeySizeNotAllowed (-25311): This item specifies a key size which is too large or too small.
public let errSecKeySizeNotAllowed: OSStatus = -25311
/// errSecNoStorageModule (-25312): A required component (data storage module) could not be loaded. You may need to restart your computer.
public let errSecNoStorageModule: OSStatus = -25312
/// errSecNoCertificateModule (-25313): A required component (certificate module) could not be loaded. You may need to restart your computer.
public let errSecNoCertificateModule: OSStatus = -25313
/// errSecNoPolicyModule (-25314): A required component (policy module) could not be loaded. You may need to restart your computer.
public let errSecNoPolicyModule: OSStatus = -25314
/// errSecInteractionRequired (-25315): User interaction is required, but is currently not allowed.
public let errSecInteractionRequired: OSStatus = -25315
/// errSecDataNotAvailable (-25316): The contents of this item cannot be retrieved.
public let errSecDataNotAvailable: OSStatus = -25316
/// errSecDataNotModifiable (-25317): The contents of this item cannot be modified.
public let errSecDataNotModifiable: OSStatus = -25317
/// errSecCreateChainFailed (-25318): One or more certificates required to validate this certificate cannot be found.
public let errSecCreateChainFailed: OSStatus = -25318
/// errSecInvalidPrefsDomain (-25319): The specified preferences domain is not valid.
public let errSecInvalidPrefsDomain: OSStatus = -25319
/// errSecInDarkWake (-25320): In dark wake, no UI possible
public let errSecInDarkWake: OSStatus = -25320
/// errSecACLNotSimple (-25240): The specified access control list is not in standard (simple) form.
public let errSecACLNotSimple: OSStatus = -25240
/// errSecPolicyNotFound (-25241): The specified policy cannot be found.
public let errSecPolicyNotFound: OSStatus = -25241
/// errSecInvalidTrustSetting (-25242): The specified trust setting is invalid.
public let errSecInvalidTrustSetting: OSStatus = -25242
/// errSecNoAccessForItem (-25243): The specified item has no access control.
public let errSecNoAccessForItem: OSStatus = -25243
/// errSecInvalidOwnerEdit (-25244): Invalid attempt to change the owner of this item.
public let errSecInvalidOwnerEdit: OSStatus = -25244
/// errSecTrustNotAvailable (-25245): No trust results are available.
public let errSecTrustNotAvailable: OSStatus = -25245
/// errSecUnsupportedFormat (-25256): Import/Export format unsupported.
public let errSecUnsupportedFormat: OSStatus = -25256
/// errSecUnknownFormat (-25257): Unknown format in import.
public let errSecUnknownFormat: OSStatus = -25257
/// errSecKeyIsSensitive (-25258): Key material must be wrapped for export.
public let errSecKeyIsSensitive: OSStatus = -25258
/// errSecMultiplePrivKeys (-25259): An attempt was made to import multiple private keys.
public let errSecMultiplePrivKeys: OSStatus = -25259
/// errSecPassphraseRequired (-25260): Passphrase is required for import/export.
public let errSecPassphraseRequired: OSStatus = -25260
/// errSecInvalidPasswordRef (-25261): The password reference was invalid.
public let errSecInvalidPasswordRef: OSStatus = -25261
/// errSecInvalidTrustSettings (-25262): The Trust Settings Record was corrupted.
public let errSecInvalidTrustSettings: OSStatus = -25262
/// errSecNoTrustSettings (-25263): No Trust Settings were found.
public let errSecNoTrustSettings: OSStatus = -25263
/// errSecPkcs12VerifyFailure (-25264): MAC verification failed during PKCS12 import (wrong password?)
public let errSecPkcs12VerifyFailure: OSStatus = -25264
/// errSecNotSigner (-26267): A certificate was not signed by its proposed parent.
public let errSecNotSigner: OSStatus = -26267
/// errSecDecode (-26275): Unable to decode the provided data.
public let errSecDecode: OSStatus = -26275
/// errSecServiceNotAvailable (-67585): The required service is not available.
public let errSecServiceNotAvailable: OSStatus = -67585
/// errSecInsufficientClientID (-67586): The client ID is not correct.
public let errSecInsufficientClientID: OSStatus = -67586
/// errSecDeviceReset (-67587): A device reset has occurred.
public let errSecDeviceReset: OSStatus = -67587
/// errSecDeviceFailed (-67588): A device failure has occurred.
public let errSecDeviceFailed: OSStatus = -67588
/// errSecInternalError (-67671): An internal error has occurred.
public let errSecInternalError: OSStatus = -67671
/// errSecMemoryError (-67672): A memory error has occurred.
public let errSecMemoryError: OSStatus = -67672
/// errSecInvalidData (-67673): Invalid data was encountered.
public let errSecInvalidData: OSStatus = -67673
/// errSecInvalidPointer (-67675): An invalid pointer was encountered.
public let errSecInvalidPointer: OSStatus = -67675

/// Apple's `noErr` (MacTypes.h): no error, 0; older keychain code compares statuses with it.
public let noErr: OSStatus = 0

/// Apple's `errSecDskFull`, the old name of `errSecDiskFull` (-34).
public let errSecDskFull: OSStatus = -34

/// The message of every status above, by value.
let securityErrorMessages: [OSStatus: String] = [
    0: "No error.",
    -4: "Function or operation not implemented.",
    -34: "The disk is full.",
    -36: "I/O error.",
    -49: "File already open with write permission.",
    -50: "One or more parameters passed to a function were not valid.",
    -61: "Write permissions error.",
    -108: "Failed to allocate memory.",
    -128: "User canceled the operation.",
    -909: "Bad parameter or invalid state for operation.",
    -2070: "An internal component failed.",
    -4960: "An unknown Core Foundation error occurred.",
    -34018: "A required entitlement isn't present.",
    -34020: "Client is restricted and is not permitted to perform this operation.",
    -25291: "No keychain is available. You may need to restart your computer.",
    -25292: "This keychain cannot be modified.",
    -25293: "The user name or passphrase you entered is not correct.",
    -25294: "The specified keychain could not be found.",
    -25295: "The specified keychain is not a valid keychain file.",
    -25296: "A keychain with the same name already exists.",
    -25297: "The specified callback function is already installed.",
    -25298: "The specified callback function is not valid.",
    -25299: "The specified item already exists in the keychain.",
    -25300: "The specified item could not be found in the keychain.",
    -25301: "There is not enough memory available to use the specified item.",
    -25302: "This item contains information which is too large or in a format that cannot be displayed.",
    -25303: "The specified attribute does not exist.",
    -25304: "The specified item is no longer valid. It may have been deleted from the keychain.",
    -25305: "Unable to search the current keychain.",
    -25306: "The specified item does not appear to be a valid keychain item.",
    -25307: "A default keychain could not be found.",
    -25308: "User interaction is not allowed.",
    -25309: "The specified attribute could not be modified.",
    -25310: "This keychain was created by a different version of the system software and cannot be opened.",
    -25311: "This item specifies a key size which is too large or too small.",
    -25312: "A required component (data storage module) could not be loaded. You may need to restart your computer.",
    -25313: "A required component (certificate module) could not be loaded. You may need to restart your computer.",
    -25314: "A required component (policy module) could not be loaded. You may need to restart your computer.",
    -25315: "User interaction is required, but is currently not allowed.",
    -25316: "The contents of this item cannot be retrieved.",
    -25317: "The contents of this item cannot be modified.",
    -25318: "One or more certificates required to validate this certificate cannot be found.",
    -25319: "The specified preferences domain is not valid.",
    -25320: "In dark wake, no UI possible",
    -25240: "The specified access control list is not in standard (simple) form.",
    -25241: "The specified policy cannot be found.",
    -25242: "The specified trust setting is invalid.",
    -25243: "The specified item has no access control.",
    -25244: "Invalid attempt to change the owner of this item.",
    -25245: "No trust results are available.",
    -25256: "Import/Export format unsupported.",
    -25257: "Unknown format in import.",
    -25258: "Key material must be wrapped for export.",
    -25259: "An attempt was made to import multiple private keys.",
    -25260: "Passphrase is required for import/export.",
    -25261: "The password reference was invalid.",
    -25262: "The Trust Settings Record was corrupted.",
    -25263: "No Trust Settings were found.",
    -25264: "MAC verification failed during PKCS12 import (wrong password?)",
    -26267: "A certificate was not signed by its proposed parent.",
    -26275: "Unable to decode the provided data.",
    -67585: "The required service is not available.",
    -67586: "The client ID is not correct.",
    -67587: "A device reset has occurred.",
    -67588: "A device failure has occurred.",
    -67671: "An internal error has occurred.",
    -67672: "A memory error has occurred.",
    -67673: "Invalid data was encountered.",
    -67675: "An invalid pointer was encountered.",
]

/// A sentence that describes `status` (Apple's `SecCopyErrorMessageString`), or "OSStatus <n>" for a
/// status this module does not know. `reserved` must be nil.
@discardableResult
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? {
    NSString(string: securityErrorMessages[status] ?? "OSStatus \(status)")
}
