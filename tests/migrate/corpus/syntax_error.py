import autogen

gc = autogen.GroupChat(agents=[a, b],
    max_round=3
manager = autogen.GroupChatManager(groupchat=gc)
