import Foundation
import Testing
import Vault
import VaultTestSupport

@testable import VaultCLI

/// The parsing, help, manual page and completions of `vault group`, each subcommand's own.
extension GroupCommandTests {
    @Test func theParserBuildsEachSubcommand() throws {
        #expect(
            try ArgumentParser.parse(["group", "create", "db", "--unix-group", "42"]).command
                == .groupCreate(GroupCreateCommand(group: try AccessGroup("db"), unixGroup: "42")))
        #expect(
            try ArgumentParser.parse(["--vault", "v", "group", "--app", "a", "ls", "--json"]).command
                == .groupList(GroupListCommand(json: true)))
        #expect(
            try ArgumentParser.parse(["group", "rm", "--force", "db"]).command
                == .groupRemove(GroupRemoveCommand(group: try AccessGroup("db"), force: true)))
        #expect(try ArgumentParser.parse(["group", "--help"]).command == .help(topic: "group"))
        #expect(try ArgumentParser.parse(["group", "rm", "-h"]).command == .help(topic: "group rm"))
        #expect(try ArgumentParser.parse(["help", "group", "create"]).command == .help(topic: "group create"))
        let global = try ArgumentParser.parse(["group", "--vault", "v", "ls", "--group", "g"]).global
        #expect(global.vaultPath == "v" && global.group == "g")
    }

    @Test func theHelpOfGroupListsItsSubcommandsAndEachHasItsOwn() throws {
        try withScratch { scratch in
            let help = try scratch.run(["group", "--help"], vaultOption: false)
            #expect(help.status == 0)
            #expect(
                help.text.hasPrefix(
                    "usage: vault group create NAME [--unix-group UNIXGROUP] [--etcd URL[,URL…] [etcd options]]\n"
                        + "       vault group ls [--json]\n"
                        + "       vault group rm NAME [--force [--everywhere]]\n"))
            for line in [
                "  create         make an access group, private or shared with a Unix group",
                "  ls             list the access groups, shared or private, with their items",
                "  rm             remove an access group",
                "  remove-member  remove a member of a shared group for good (new gid, files moved, key rotated)",
            ] {
                #expect(help.text.contains("\n" + line + "\n"), "\(line)")
            }
            let create = try scratch.run(["help", "group", "create"], vaultOption: false)
            #expect(
                create.text.hasPrefix(
                    "usage: vault group create NAME [--unix-group UNIXGROUP] [--etcd URL[,URL…] [etcd options]]\n"))
            #expect(create.text.contains("--unix-group UNIXGROUP"))
            #expect(try scratch.run(["group", "rm", "--help"], vaultOption: false).text.contains("--force"))
        }
    }

    @Test func theManualPageOfGroupHasASectionPerSubcommand() throws {
        let page = ManualPages.command(try #require(ArgumentParser.commandTable.command("group")))
        #expect(
            page.contains(
                ".SH SUBCOMMANDS\n.SS create\n.nf\nvault group create NAME [\\-\\-unix\\-group UNIXGROUP] [\\-\\-etcd ")
        )
        #expect(page.contains(".SS ls\n") && page.contains(".SS rm\n"))
        #expect(page.contains("\\fB\\-\\-unix\\-group\\fR \\fIUNIXGROUP\\fR") && page.contains("\\fB\\-\\-force\\fR"))
    }

    /// The subcommands, and each one's options, through the shell itself.
    @Test(arguments: ["bash", "zsh", "fish"])
    func theCompletionsOfferTheSubcommandsAndTheirOptions(_ shell: String) throws {
        guard installedShell(shell) != nil else { return }
        try withScratch { scratch in
            let completion = try CompletionScratch(shell, scratch: scratch)
            let group = try #require(ArgumentParser.commandTable.command("group"))
            #expect(
                try completion.complete(["vault", "group", ""]) == [
                    "create", "export-key", "join", "ls", "machines", "remove-member", "resync", "revoke", "rm",
                    "rotate",
                ])
            #expect(
                try completion.complete(["vault", "--vault", scratch.vault, "group", "r"]) == [
                    "remove-member", "resync", "revoke", "rm", "rotate",
                ])
            let create = try #require(group.subcommand("create"))
            #expect(try completion.complete(["vault", "group", "create", "-"]) == CompletionTests.optionWords(create))
            #expect(try completion.complete(["vault", "group", "create", "--u"]) == ["--unix-group"])
            #expect(try completion.complete(["vault", "group", "rm", "db", "--f"]) == ["--force"])
            #expect(try completion.complete(["vault", "group", "ls", "--j"]) == ["--json"])
        }
    }
}

@Suite struct GroupRotateCommandTests {
}

/// `vault groups` is `vault group ls` under another name: one command, one run, and its help, manual
/// page and completions say so and offer the same options.
@Suite struct GroupsAliasTests {
    @Test func theParserMakesTheSameCommandOfBoth() throws {
        for json in [false, true] {
            let flag = json ? ["--json"] : []
            let alias = try ArgumentParser.parse(["groups"] + flag).command
            #expect(alias == (try ArgumentParser.parse(["group", "ls"] + flag).command))
            #expect(alias == .groupList(GroupListCommand(json: json)))
        }
    }

    @Test func theHelpOfGroupsIsThatOfGroupLs() throws {
        try withScratch { scratch in
            let alias = try scratch.run(["groups", "--help"], vaultOption: false)
            let command = try scratch.run(["group", "ls", "--help"], vaultOption: false)
            #expect(alias.status == 0 && command.status == 0)
            #expect(alias.text.hasPrefix("usage: vault groups [--json]\n"))
            #expect(alias.text.contains("The same command as `vault group ls`."))
            // Everything after the first paragraph is the same text.
            let details = { (text: String) in text.components(separatedBy: "\n\n").dropFirst(2).joined() }
            let aliasDetails = details(alias.text).replacingOccurrences(
                of: "The same command as `vault group ls`. ", with: "")
            #expect(
                aliasDetails.split(whereSeparator: \.isWhitespace)
                    == details(command.text).split(whereSeparator: \.isWhitespace))
            #expect(try scratch.run(["help", "groups"], vaultOption: false).text == alias.text)
        }
    }

    @Test func theManualPageOfGroupsSaysItIsAnAlias() throws {
        let table = ArgumentParser.commandTable
        let alias = try #require(table.command("groups"))
        let command = try #require(table.command("group")?.subcommand("ls"))
        #expect(alias.options == command.options && alias.operands == command.operands)
        #expect(alias.details == "The same command as `vault group ls`. " + command.details)
        let page = ManualPages.command(alias)
        #expect(page.contains("vault group ls"))
        #expect(page.contains("\\fB\\-\\-json\\fR"))
        #expect(ManualPages.pages().contains { $0.name.hasPrefix("vault-groups.") })
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func theCompletionsOfferTheSameOptions(_ shell: String) throws {
        guard installedShell(shell) != nil else { return }
        try withScratch { scratch in
            let completion = try CompletionScratch(shell, scratch: scratch)
            #expect(try completion.complete(["vault", "groups", "--j"]) == ["--json"])
            #expect(try completion.complete(["vault", "group", "ls", "--j"]) == ["--json"])
            let alias = try completion.complete(["vault", "groups", "-"])
            #expect(alias == (try completion.complete(["vault", "group", "ls", "-"])))
        }
    }
}
