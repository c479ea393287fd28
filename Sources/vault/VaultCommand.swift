import VaultStore

@main
struct VaultCommand {
    static func main() {}
}
